// The agent definition language (design/AGENTS.md) as a Zod schema: structure only.
// Cross-references (phase ids, action names, templates) are checked by the server's validator.
import { z } from 'zod';

const Identifier = z
  .string()
  .regex(/^[a-z][a-z0-9_]*$/, 'must match [a-z][a-z0-9_]*')
  .max(64);
const PhaseId = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]*$/, 'must match [A-Za-z][A-Za-z0-9_-]*')
  .max(64);

/** A text, or a map of language code to text. */
export const LocalizedText = z.union([
  z.string().max(20_000),
  z.record(z.string().regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'must be a language code such as en or pt-BR'), z.string().max(20_000)),
]);

export const OptionDef = z.object({
  label: LocalizedText,
  value: z.string().min(1).max(200),
});

export const SlotType = z.enum(['text', 'number', 'integer', 'email', 'boolean', 'date', 'choice']);

export const CollectDef = z
  .object({
    slot: Identifier,
    type: SlotType.default('text'),
    pattern: z.string().max(500).optional(),
    choices: z.array(z.string().min(1).max(200)).min(1).max(200).optional(),
    retry: LocalizedText.optional(),
    max_attempts: z.number().int().min(1).max(20).default(3),
    min: z.number().finite().optional().describe('Smallest value a number or integer slot accepts'),
    max: z.number().finite().optional().describe('Largest value a number or integer slot accepts'),
    prefill: z
      .boolean()
      .optional()
      .describe('Fill the slot from the message that chose the capability when it holds exactly one value of its type (default true)'),
  })
  .strict();

export const BranchDef = z
  .object({
    if: z.string().min(1).max(2000).optional(),
    goto: z.string().min(1),
  })
  .strict();

export const PhaseDef = z
  .object({
    id: PhaseId,
    say: LocalizedText.optional(),
    options: z.array(OptionDef).max(50).optional(),
    collect: CollectDef.optional(),
    call: z.string().min(1).optional(),
    on_error: z.string().min(1).optional(),
    next: z.union([z.string().min(1), z.array(BranchDef).min(1).max(50)]).optional(),
    end: z.enum(['completed', 'escalated', 'paused']).optional(),
    outcome: Identifier.optional(),
  })
  .strict();

export const CapabilityDef = z
  .object({
    name: Identifier,
    description: z.string().max(2000).optional(),
    examples: z.array(z.string().min(1).max(1000)).max(50_000).optional(),
    requires: z.record(z.array(z.union([z.string(), z.number(), z.boolean()])).min(1)).optional(),
    phases: z.array(PhaseDef).min(1).max(500),
  })
  .strict();

const JsonValue: z.ZodType<unknown> = z.lazy(() => z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(JsonValue), z.record(JsonValue)]));

export const HttpActionDef = z
  .object({
    type: z.literal('http'),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    url: z.string().min(1).max(4000),
    headers: z.record(z.string().max(4000)).optional(),
    body: JsonValue.optional(),
    timeout_ms: z.number().int().min(1).max(30_000).default(5000),
    retries: z.number().int().min(0).max(5).default(0),
    save: z.record(Identifier, z.string().min(1).max(500)).optional(),
  })
  .strict();

export const WebhookEventName = z.enum(['conversation.completed', 'conversation.escalated', 'conversation.abandoned']);

export const WebhookDef = z
  .object({
    url: z.string().url().max(2000).describe('http(s) URL; the same address rules as HTTP actions apply'),
    events: z.array(WebhookEventName).min(1),
    secret_name: z
      .string()
      .regex(/^[A-Z0-9_]+$/, 'must match [A-Z0-9_]+')
      .optional()
      .describe('Signs deliveries with the secret SWITCHBOARD_SECRET_<NAME> (Standard Webhooks)'),
  })
  .strict();

export const AgentDefinition = z
  .object({
    name: z.string().min(1).max(200),
    description: z.string().max(2000).optional(),
    default_language: z
      .string()
      .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/)
      .default('en'),
    routing: z
      .object({
        threshold: z.number().min(0).max(1).optional().describe('Lowest probability at which a capability is chosen; calibrated when absent'),
        min_similarity: z
          .number()
          .min(0)
          .max(1)
          .optional()
          .describe("Lowest similarity to the capability's closest example at which it is chosen; calibrated when absent, 0 turns the check off"),
        fallback: Identifier.optional(),
        switching: z
          .object({
            enabled: z.boolean().default(true),
            threshold: z.number().min(0).max(1).optional(),
          })
          .strict()
          .optional()
          .describe('Mid-flow switching: a message that does not fill a waiting collect may move to another capability'),
      })
      .strict()
      .optional(),
    inactivity_timeout_seconds: z.number().int().min(1).max(31_536_000).default(1800),
    messages: z
      .object({
        fallback: LocalizedText.optional(),
        escalated: LocalizedText.optional(),
        not_entitled: LocalizedText.optional(),
        retry: LocalizedText.optional(),
      })
      .strict()
      .optional(),
    capabilities: z.array(CapabilityDef).min(1).max(1000),
    actions: z.record(Identifier, HttpActionDef).optional(),
    webhooks: z.array(WebhookDef).max(20).optional(),
  })
  .strict()
  .describe('Agent definition (see docs/agents.md)');

export type AgentDefinitionInput = z.input<typeof AgentDefinition>;
export type AgentDefinition = z.infer<typeof AgentDefinition>;
export type PhaseDef = z.infer<typeof PhaseDef>;
export type CapabilityDef = z.infer<typeof CapabilityDef>;
export type HttpActionDef = z.infer<typeof HttpActionDef>;
export type LocalizedText = z.infer<typeof LocalizedText>;
