// Releases (docs/releases.md): activations gated on an evaluation of the candidate, traffic
// splits between the current version and a candidate, and the tamper-evident record of both.
import { z } from 'zod';
import { CHAIN_BREAKS, Page, ReleaseGate, Timestamp } from './common.js';
import { KnowledgeSnapshot } from './knowledge.js';
import { Actor } from './people.js';

const Reason = z.string().trim().min(1).max(2000);

/** Forcing a release past failed gates takes a written reason. */
const forced = (v: { force: boolean; reason?: string }) => !v.force || (v.reason !== undefined && v.reason.length > 0);
const forcedIssue = { message: 'a forced release needs a reason', path: ['reason'] };

export const ActivateQuery = z
  .object({
    force: z
      .enum(['true', 'false'])
      .default('false')
      .transform((v) => v === 'true')
      .describe('true: release even when gates fail (a written `reason` is required, and recorded)'),
    reason: Reason.optional().describe('Why: recorded with the release'),
  })
  .refine(forced, forcedIssue);

export const Split = z
  .object({
    version: z.number().int().describe('The candidate version a share of new conversations starts on'),
    percent: z.number().describe('The share of new conversations sent to the candidate, 0–100'),
    started_at: Timestamp,
  })
  .describe(
    'A traffic split: new conversations whose user (or, anonymous, the conversation) hashes under `percent` start on the candidate; the rest, and every running conversation, stay where they are',
  );
export type Split = z.infer<typeof Split>;

export const PutSplit = z
  .object({
    version: z.number().int().min(1).describe('The candidate version'),
    percent: z.number().min(0).max(100).multipleOf(0.01).describe('Share of new conversations sent to the candidate'),
    force: z.boolean().default(false).describe('Start the split even when gates fail (a written `reason` is required)'),
    reason: Reason.optional(),
  })
  .strict()
  .refine(forced, forcedIssue);

export const EndSplitQuery = z.object({ reason: Reason.optional().describe('Why: recorded with the step') });

export const ReleaseAction = z
  .enum(['activate', 'rollback', 'promote', 'split_start', 'split_change', 'split_end'])
  .describe(
    'activate: a version made current (by activation or a PUT); rollback: an older version that was released before made current again; promote: a split’s candidate made current; split_start, split_change, split_end: a split begun, its share changed, ended',
  );

const ReleaseSchema = z
  .object({
    id: z.string().uuid(),
    sequence: z.number().int().describe("Place in the agent's release chain, from 1"),
    action: ReleaseAction,
    version: z.number().int().describe('The version released (the candidate of a split)'),
    digest: z.string().describe("SHA-256 of that version's canonical definition"),
    knowledge: KnowledgeSnapshot.nullable().describe(
      'The knowledge snapshot that version answers from (its definition takes knowledge through releases); null when it follows its sources live',
    ),
    previous_version: z.number().int().nullable().describe('The version that was current before'),
    split: Split.omit({ started_at: true }).nullable().describe('The split in force after this step'),
    gates: z.array(ReleaseGate).describe('The gates judged, with their figures (none for a rollback, a split ended, or an agent without a release policy)'),
    evaluation_id: z.string().uuid().nullable().describe('The evaluation the gates were judged on'),
    forced: z.boolean().describe('Released although gates failed'),
    reason: z.string().nullable(),
    key_id: z.string().nullable().describe('The API key that did it (AUTH_MODE=api_key); null otherwise'),
    actor: Actor.nullable().describe(
      'Who did it: a person (issuer, subject, email), a key, or the gateway of AUTH_MODE=header; chained with the step. Null for steps recorded before actors were',
    ),
    request_id: z.string(),
    created_at: Timestamp,
    hash: z.string().describe("The step's chained hash (docs/security.md)"),
  })
  .describe('One step of an agent’s release record');
export type Release = z.infer<typeof ReleaseSchema>;
export const Release: z.ZodType<Release> = ReleaseSchema;

export const ReleasesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(500).optional(),
});

export const ReleasesVerifyQuery = z.object({
  head: z
    .string()
    .regex(/^[1-9][0-9]{0,9}:[0-9a-f]{64}$/, 'a head as published: <sequence>:<hash>')
    .optional()
    .describe('A head published earlier (the `head` of a `release.head` log line): the record must still hold that step with that hash'),
});

const ReleaseVerificationSchema = z
  .object({
    entries: z.number().int(),
    keyed_entries: z.number().int().describe('Steps whose hash is an HMAC under the operator key (AUDIT_CHAIN_KEY)'),
    keyed_from: z
      .number()
      .int()
      .nullable()
      .optional()
      .describe('Present with AUDIT_CHAIN_KEY: the step from which every one is keyed under it (null when none is); steps before it prove consistency only'),
    valid: z.boolean(),
    first_broken: z
      .object({
        sequence: z.number().int(),
        reason: z.enum([...CHAIN_BREAKS, 'state_mismatch', 'evidence_mismatch', 'evidence_missing', 'anchor_missing']),
      })
      .describe(
        "`data_mismatch` includes a step's version column that is not its chained one; `state_mismatch`: the agent's served version or split is not the one the newest step made; `evidence_mismatch` / `evidence_missing`: the evaluation a step cites was changed or deleted; `anchor_missing`: the record no longer holds the head given in `head` (steps cut off the end)",
      )
      .nullable(),
    head: z.string().optional().describe('The head checked, when one was given'),
  })
  .describe("The release record's hash chain recomputed, and its first broken link");
export type ReleaseVerification = z.infer<typeof ReleaseVerificationSchema>;
export const ReleaseVerification: z.ZodType<ReleaseVerification> = ReleaseVerificationSchema;

const SplitResultSchema = z
  .object({
    split: Split.nullable().describe('The split in force now'),
    release: Release,
  })
  .describe('The split and the step of the release record it made');
export type SplitResult = z.infer<typeof SplitResultSchema>;
// Typed by name, so that the contract's declarations stay within what TypeScript serializes.
export const SplitResult: z.ZodType<SplitResult> = SplitResultSchema;

export const ReleasePage = Page(Release);
