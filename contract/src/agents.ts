// Agent resources (beyond the seed): definitions, versions and capability ids.
import { z } from 'zod';
import { List, Page, Timestamp } from './common.js';
import { AgentDefinition } from './definition.js';
import { KnowledgeSnapshot } from './knowledge.js';
import { Release, Split } from './releases.js';

const AgentSchema = z
  .object({
    id: z.string().uuid(),
    slug: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    version: z.number().int().describe('Current version; every changed definition makes a new one'),
    capabilities: z.array(z.object({ id: z.string().uuid(), name: z.string(), description: z.string().nullable() })),
    definition: AgentDefinition,
    split: Split.nullable().describe('The traffic split in force, if any (docs/releases.md)'),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .describe('An agent and its current definition');
export type Agent = z.infer<typeof AgentSchema>;
// Typed by name (as below): the agent and its definition are in many operations' responses, and
// the contract's declarations repeat each response's type; named, they stay within what
// TypeScript serializes.
export type AgentInput = z.input<typeof AgentSchema>;
export const Agent: z.ZodType<Agent, z.ZodTypeDef, AgentInput> = AgentSchema;

export const DefinitionWarning = z.object({
  code: z
    .enum(['thin_capability', 'thin_fallback', 'duplicate_example', 'example_closer_to_other', 'unknown_slot', 'unreachable_host', 'host_not_checked'])
    .describe(
      "thin_capability: fewer than 5 examples; thin_fallback: the fallback has fewer than 8 examples, or placeholders, which replace the router's class of everyday messages; duplicate_example: one example under two capabilities; example_closer_to_other: an example nearer to another capability's examples than to its own; unknown_slot: a template or condition reads a slot that nothing collects or saves; unreachable_host: an action or webhook names a host this tenant may not reach (unknown, or a private address not in ACTION_ALLOWED_HOSTS); host_not_checked: a host whose check could not be made now (its name server did not answer in time, too many checks under way, or more hosts than are checked for one definition)",
    ),
  capability: z.string().optional().describe('The capability concerned ("*" for a line that counts further warnings)'),
  path: z.string().optional().describe('Where in the definition, as in validation problems'),
  message: z.string(),
  example: z.string().optional(),
  other: z.string().optional().describe('The other capability'),
});
export type DefinitionWarning = z.infer<typeof DefinitionWarning>;

export const PutAgentQuery = z.object({
  activate: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true')
    .describe('false: store a changed definition as a new version without making it current (a draft)'),
  note: z
    .string()
    .min(1)
    .max(300)
    .optional()
    .describe('What made this definition, kept beside the version it makes (`agents apply` sends the file); "PUT" when absent'),
});

export const VersionState = z
  .enum(['current', 'split_candidate', 'draft', 'released_before', 'never_released'])
  .describe(
    'current: new conversations start on it; split_candidate: a split sends a share to it; draft: the newest version, newer than the current one (review actions add to it); released_before: a step of the release record made it current once (activating it again is a rollback); never_released: none of these',
  );
export type VersionState = z.infer<typeof VersionState>;

export const AgentVersionSummary = z.object({
  version: z.number().int(),
  created_at: Timestamp,
  current: z.boolean().describe('Whether new conversations start on this version'),
  state: VersionState,
  note: z.string().nullable().describe('What made the version: "PUT", "agents apply FILE", a review action…; null for versions older than notes'),
  capabilities: z.array(z.string()).describe("The version's capability names"),
  knowledge: KnowledgeSnapshot.nullable().describe(
    'The knowledge snapshot the version answers from, pinned when it was made (`knowledge_updates: release`); null when it follows its sources live',
  ),
});
export type AgentVersionSummary = z.infer<typeof AgentVersionSummary>;

const AgentVersionSchema = AgentVersionSummary.extend({
  digest: z.string().describe('SHA-256 of the canonical definition'),
  definition: AgentDefinition,
  warnings: z
    .array(DefinitionWarning)
    .describe("Hosts the version's actions and webhooks name that this tenant may not reach, checked now (routing warnings come with the PUT)"),
}).describe('One stored version of an agent');
export type AgentVersion = z.infer<typeof AgentVersionSchema>;
export type AgentVersionInput = z.input<typeof AgentVersionSchema>;
export const AgentVersion: z.ZodType<AgentVersion, z.ZodTypeDef, AgentVersionInput> = AgentVersionSchema;

export const VersionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(500).optional(),
});

const PutAgentResultSchema = AgentSchema.extend({
  stored_version: z.number().int().describe('The version this definition is stored as: `version` unless it was stored as a draft (`activate=false`)'),
  release: Release.nullable().describe('The step of the release record this PUT made, when it made a version current'),
  warnings: z
    .array(DefinitionWarning)
    .describe('What in the definition is likely to route or render badly; the definition is accepted all the same (docs/routing.md)'),
}).describe('The agent and its current definition, with routing warnings');
export type PutAgentResult = z.infer<typeof PutAgentResultSchema>;
export type PutAgentResultInput = z.input<typeof PutAgentResultSchema>;
export const PutAgentResult: z.ZodType<PutAgentResult, z.ZodTypeDef, PutAgentResultInput> = PutAgentResultSchema;

const ActivationResultSchema = AgentSchema.extend({
  release: Release.describe('The step of the release record this activation made, with the gates it passed'),
}).describe('The agent, now on the activated version');
export type ActivationResult = z.infer<typeof ActivationResultSchema>;
export type ActivationResultInput = z.input<typeof ActivationResultSchema>;
export const ActivationResult: z.ZodType<ActivationResult, z.ZodTypeDef, ActivationResultInput> = ActivationResultSchema;

export const AgentList = List(Agent);

export const VersionPage = Page(AgentVersionSummary);
