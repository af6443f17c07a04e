// The agent definition language (design/AGENTS.md) as a Zod schema: structure only.
// Cross-references (phase ids, action names, templates) are checked by the server's validator.
import { z } from 'zod';
import { SourceName, SourceTag } from './knowledge.js';

const Identifier = z
  .string()
  .regex(/^[a-z][a-z0-9_]*$/, 'must match [a-z][a-z0-9_]*')
  .max(64);
const PhaseId = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]*$/, 'must match [A-Za-z][A-Za-z0-9_-]*')
  .max(64);

/** A text, or a map of language code to text. */
export const LocalizedText = z.union(
  [
    z.string().max(20_000),
    z.record(z.string().regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'must be a language code such as en or pt-BR'), z.string().max(20_000)),
  ],
  { errorMap: (issue, ctx) => ({ message: issue.code === 'invalid_union' ? 'expected text, or a map of language → text' : ctx.defaultError }) },
);

const LanguageCode = z.string().regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'must be a language code such as en or pt-BR');

/** The web chat widget's presentation of an agent: plain text and a colour, never markup. */
export const WidgetDef = z
  .object({
    title: z.string().trim().min(1).max(80).optional().describe("The panel's title; the agent's name when absent"),
    greeting: z
      .union([z.string().max(500), z.record(LanguageCode, z.string().max(500))])
      .optional()
      .describe('Shown before the first message: text, or a map of language → text'),
    accent: z
      .string()
      .regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour such as #1f6feb')
      .optional()
      .describe('The colour of the launcher, the header and the visitor’s messages'),
    languages: z.array(LanguageCode).max(20).optional().describe('Languages the visitor may choose among; the first is the default'),
  })
  .strict();

export const OptionDef = z
  .object({
    label: LocalizedText,
    value: z.string().min(1).max(200),
  })
  .strict();

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
    sensitive: z
      .boolean()
      .optional()
      .describe(
        'Whatever the user answers to this slot is kept masked (docs/privacy.md): the message that filled it is kept as [SLOT_NAME], and the value wherever else it appears; the turn itself uses the real value',
      ),
  })
  .strict();

/** A slot a generative phase's model may fill with the `fill` tool: the same types and checks as collect. */
export const FillDef = z
  .object({
    type: SlotType.describe('Required: the value is checked as a collected one would be'),
    pattern: z.string().max(500).optional(),
    choices: z.array(z.string().min(1).max(200)).min(1).max(200).optional(),
    min: z.number().finite().optional(),
    max: z.number().finite().optional(),
  })
  .strict();

export const GenerateDef = z
  .object({
    instructions: LocalizedText.describe('The system prompt, a template (slots, user, context, message; secrets are not readable)'),
    tools: z.array(Identifier).max(32).optional().describe('Actions offered to the model as tools; each needs `parameters`'),
    knowledge: z.boolean().default(false).describe("Put the best passages of the agent's knowledge in the prompt"),
    fills: z.record(Identifier, FillDef).optional().describe('Slots the model may fill with the `fill` tool'),
    max_steps: z.number().int().min(1).max(10).default(4).describe('Model calls per user message'),
    history: z.number().int().min(0).max(50).default(12).describe('Earlier turns sent to the model'),
    grounded: z
      .boolean()
      .optional()
      .describe(
        "Say the model's answer only when each claim in it is supported by a passage it cites by id (`[source#n]`); otherwise the phase fails to `on_error`. Default: true when `knowledge` is on and the agent names knowledge_sources",
      ),
    min_support: z
      .number()
      .min(0.1)
      .max(1)
      .optional()
      .describe("A grounded answer: the share of a claim's content words the passage it cites must hold (default 0.6)"),
  })
  .strict();

/** An answer phase: the best passages of the agent's knowledge sources say the reply, no model needed. */
export const AnswerDef = z
  .object({
    min_confidence: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe("How much of the question the best passage must hold (0–1, weighted by the terms' rarity) to be said; default 0.7"),
    passages: z.number().int().min(1).max(3).default(1).describe('Passages an answer may quote (each cited)'),
    not_found: z
      .string()
      .min(1)
      .default('escalate')
      .describe(
        "Where a question the sources do not answer goes: `escalate`, `fallback` (the agent's fallback message; the conversation stays open) or a phase id",
      ),
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
    generate: GenerateDef.optional().describe("A language model writes this phase's replies (docs/generative.md)"),
    answer: AnswerDef.optional().describe("Answer from the agent's knowledge sources with the best passage, cited (docs/knowledge.md)"),
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
    body: JsonValue.optional().describe('A JSON body; strings in it are templates'),
    timeout_ms: z.number().int().min(1).max(30_000).default(5000),
    retries: z.number().int().min(0).max(5).default(0),
    save: z.record(Identifier, z.string().min(1).max(500)).optional(),
    description: z.string().max(2000).optional().describe('What the action does, for a model offered it as a tool'),
    parameters: z
      .record(z.unknown())
      .optional()
      .describe("JSON Schema (an object) of the tool's arguments, readable by the templates as `args`; needed to offer the action as a tool"),
    real_values: z
      .boolean()
      .optional()
      .describe(
        "A model's call of this tool gets the real values behind the placeholders the model was shown ([EMAIL_1]) in its arguments, in the turn they were typed (docs/privacy.md); otherwise the placeholders as written",
      ),
  })
  .strict();

export const KnowledgeDef = z
  .object({
    id: z
      .string()
      .regex(/^[a-z0-9_-]+$/, 'must match [a-z0-9_-]+')
      .max(64),
    title: z.string().max(200).optional(),
    text: z.string().min(1).max(200_000).describe('Markdown; split into passages at headings and paragraphs'),
  })
  .strict();

export const LlmDef = z
  .object({
    model: z.string().min(1).max(200).optional().describe("The provider's LLM_MODEL when absent"),
    temperature: z.number().min(0).max(2).default(0),
    max_output_tokens: z.number().int().min(1).max(16_384).default(500).describe('Per model call'),
  })
  .strict();

export const WebhookEventName = z.enum(['conversation.completed', 'conversation.escalated', 'conversation.abandoned']);

/** Why a URL with `${NAME}` in it is refused: only agent files have variables. */
export const FILE_VARIABLE_HINT =
  '${…} is filled in only in agent files (npm run agents -- validate/apply, AGENTS_DIR); a definition sent to the API takes literal values';

export const WebhookDef = z
  .object({
    url: z
      .string()
      .url()
      .max(2000)
      .superRefine((u, ctx) => {
        if (/\$\{[A-Za-z_]/.test(u)) ctx.addIssue({ code: 'custom', message: FILE_VARIABLE_HINT });
      })
      .describe('http(s) URL; the same address rules as HTTP actions apply'),
    events: z.array(WebhookEventName).min(1),
    secret_name: z
      .string()
      .regex(/^[A-Z0-9_]+$/, 'must match [A-Z0-9_]+')
      .optional()
      .describe('Signs deliveries with the secret SWITCHBOARD_SECRET_<NAME> (Standard Webhooks)'),
  })
  .strict();

const Share = z.number().min(0).max(1);

export const ReleasePolicy = z
  .object({
    require: z
      .object({
        tests: z.literal('pass').optional().describe('Every stored test conversation (PUT …/test-suite) passes on the candidate'),
        labelled_accuracy: z
          .object({
            min: Share.optional().describe('Share of reviewed messages the candidate routes as the reviewers said'),
            no_regression: z.boolean().default(false).describe("Not below the current version's share"),
          })
          .strict()
          .optional(),
        routing_accuracy: z
          .object({
            min: Share.optional().describe("Cross-validated accuracy of the candidate's own examples"),
            no_regression: z.boolean().default(false).describe("Not below the current version's"),
          })
          .strict()
          .optional(),
        replay: z
          .object({
            conversations: z.number().int().min(1).max(500).default(100).describe('The newest recorded conversations replayed against the candidate'),
            max_changed_outcomes: Share.optional().describe('Most share of them whose status or outcome changes'),
            max_changed_capabilities: Share.optional().describe('Most share of them routed to another capability'),
            new_hosts: z
              .enum(['forbid', 'allow'])
              .default('allow')
              .describe("forbid: the candidate's actions and webhooks name no host the current version does not"),
          })
          .strict()
          .optional(),
      })
      .strict()
      .default({}),
    max_age_hours: z
      .number()
      .int()
      .min(1)
      .max(720)
      .default(24)
      .describe('An evaluation of the same two versions and test suite younger than this is judged again rather than run again'),
  })
  .strict()
  .describe("What a version must show before it is released (docs/releases.md); the current version's policy judges a candidate");
export type ReleasePolicy = z.infer<typeof ReleasePolicy>;

const MaskMode = z.union([
  z
    .enum(['redact', 'hash', 'keep'])
    .describe(
      'redact: a typed placeholder ([EMAIL]); hash: the placeholder and a keyed hash of the value, the same within the tenant ([EMAIL #3f9a1c2b7d]; needs SECRETS_KEY); keep: left as typed',
    ),
  z
    .object({ keep_last: z.number().int().min(1).max(6).describe('Letters and digits kept at the end') })
    .strict()
    .describe('[CARD …1111]'),
]);
const MaskWhole = z.enum(['redact', 'hash', 'keep']);

export const CustomDetector = z
  .object({
    name: z
      .string()
      .regex(/^[a-z][a-z0-9_]{0,31}$/, 'lower-case letters, digits and _, starting with a letter (at most 32)')
      .describe('The type it masks as: member_id is kept as [MEMBER_ID]'),
    pattern: z.string().min(1).max(500).describe('An RE2 pattern (linear time, bounded like every pattern a definition holds); every match is masked'),
    mode: MaskMode.optional().describe('What it does with a match (default: redact)'),
  })
  .strict();

export const PrivacyDef = z
  .object({
    mask: z
      .object({
        email: MaskWhole.optional(),
        phone: MaskMode.optional().describe('International numbers, and national ones of `phone_regions`'),
        card: MaskMode.optional().describe('Payment cards: an issuer prefix and the Luhn check, in any grouping'),
        iban: MaskMode.optional().describe('IBANs, by their ISO 13616 checksum'),
        ssn: MaskMode.optional().describe('US social security numbers written 123-45-6789 or 123 45 6789'),
        national_id: MaskMode.optional().describe('Spanish DNI and NIE, by their control letter'),
        ip: MaskWhole.optional().describe('IPv4 and IPv6 addresses'),
        birth_date: MaskWhole.optional().describe(
          'A date stated as a birth date (born, date of birth, DOB; nacido, fecha de nacimiento; geboren, Geburtsdatum)',
        ),
        name: MaskWhole.optional().describe("A person's name where the message gives it as one (my name is…, me llamo…, ich heiße…, Name:)"),
        address: MaskWhole.optional().describe('A street address: a house number beside a street word (Street, Ave, Calle, Avenida, Straße, …str., Weg)'),
      })
      .strict()
      .describe('What each detector does with what it finds; a type not named is not looked for'),
    custom: z
      .array(CustomDetector)
      .max(20)
      .optional()
      .describe("Patterns of the team's own, each masked under its name (a tenant's and an agent's with one name: the agent's)"),
    phone_regions: z
      .array(z.string().regex(/^[A-Z]{2}$/, 'an ISO 3166 region code: US, GB, ES'))
      .max(8)
      .optional()
      .describe(
        "Regions whose national phone numbers are recognised (default: those of the agent's languages); each costs a pass over every text masked, so at most 8",
      ),
  })
  .strict()
  .describe("Personal data masked in everything kept and in every model call (docs/privacy.md); an agent's policy overrides the tenant's type by type");
export type PrivacyDef = z.infer<typeof PrivacyDef>;

const AgentDefinitionSchema = z
  .object({
    name: z.string().min(1).max(200),
    description: z.string().max(2000).optional(),
    default_language: z
      .string()
      .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/)
      .default('en'),
    time_zone: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe(
        "IANA time zone (Europe/Lisbon) where relative dates (today, next Friday) are resolved when the context's preferences.time_zone names none; UTC when absent",
      ),
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
        out_of_scope: z
          .array(z.string().min(1).max(1000))
          .max(5_000)
          .optional()
          .describe(
            "Messages no capability handles (the review inbox's `add_out_of_scope` adds them): they join the fallback capability's examples, or, with the built-in fallback, the router's class of everyday messages",
          ),
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
    llm: LlmDef.optional().describe("Defaults for this agent's model calls"),
    knowledge: z.array(KnowledgeDef).max(1000).optional().describe('Documents generative phases may answer from'),
    knowledge_sources: z
      .array(
        z.union([SourceName.describe('A knowledge source by name'), z.object({ tag: SourceTag.describe('Every knowledge source with this tag') }).strict()]),
      )
      .min(1)
      .max(100)
      .optional()
      .describe(
        "The tenant's knowledge sources answer phases and generative phases answer from: names, and `{ tag }` for every source with the tag (docs/knowledge.md)",
      ),
    knowledge_updates: z
      .enum(['live', 'release'])
      .optional()
      .describe(
        "How the sources' changes reach the agent. live (the default): each answer searches the passages as they are now. release: a version answers from the knowledge snapshot it was made at; a changed source reaches the agent with a new version (`agents apply` again), judged by the release gates (docs/knowledge.md)",
      ),
    webhooks: z.array(WebhookDef).max(20).optional(),
    widget: WidgetDef.optional().describe('How the web chat widget presents this agent (docs/widget.md)'),
    release: ReleasePolicy.optional(),
    privacy: PrivacyDef.optional(),
  })
  .strict()
  .describe('Agent definition (see docs/agents.md)');

export type AgentDefinitionInput = z.input<typeof AgentDefinitionSchema>;
export type AgentDefinition = z.infer<typeof AgentDefinitionSchema>;
// Typed by name: the definition is in several operations' bodies and responses, and the
// contract's declarations would otherwise spell out its whole schema type at each.
export const AgentDefinition: z.ZodType<AgentDefinition, z.ZodTypeDef, AgentDefinitionInput> = AgentDefinitionSchema;
export type PhaseDef = z.infer<typeof PhaseDef>;
export type CapabilityDef = z.infer<typeof CapabilityDef>;
export type HttpActionDef = z.infer<typeof HttpActionDef>;
export type LocalizedText = z.infer<typeof LocalizedText>;
export type GenerateDef = z.infer<typeof GenerateDef>;
export type FillDef = z.infer<typeof FillDef>;
