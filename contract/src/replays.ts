// Replays (docs/operations.md): recorded conversations fed to another version of their agent,
// with actions answered from their recordings, to see what it would have said.
import { z } from 'zod';
import { Page, Timestamp } from './common.js';
import { ConversationStatus } from './converse.js';

export const StartReplay = z
  .object({
    version: z.number().int().min(1).describe('The version to replay the conversations against'),
    conversations: z.array(z.string().uuid()).min(1).max(500).optional().describe('These conversations; else those the filters find, newest first'),
    status: ConversationStatus.optional(),
    capability: z.string().min(1).max(64).optional(),
    created_after: z.string().datetime({ offset: true }).optional(),
    created_before: z.string().datetime({ offset: true }).optional(),
    limit: z.number().int().min(1).max(500).default(100),
  })
  .strict();

const TurnField = z.enum(['reply', 'capability', 'phase', 'status', 'outcome', 'citations']);

export const ReplayDifference = z.object({
  turn_index: z.number().int().describe('Index of the user turn whose answer differed'),
  message: z.string().optional().describe('What the user said at that turn'),
  field: z
    .enum(['reply', 'capability', 'phase', 'status', 'outcome', 'citations', 'unrecorded_action', 'action_request'])
    .describe(
      'citations: the knowledge passages the answer cites (their ids, in order) differ, as when a source changed; unrecorded_action: the version calls an action the conversation never called; action_request: it calls a recorded action with another method or URL (answered from the recording), `recorded` and `replayed` being "action METHOD URL"',
    ),
  recorded: z.unknown().describe('The recorded value (any JSON)'),
  replayed: z.unknown().describe('The replayed value (any JSON)'),
  changes: z
    .array(z.object({ field: TurnField, recorded: z.unknown().describe('Any JSON'), replayed: z.unknown().describe('Any JSON') }))
    .optional()
    .describe('Every answer field that differed at that turn, `field` among them when it is one'),
});

export const ReplayResult = z.object({
  conversation_id: z.string().uuid(),
  verdict: z.enum(['identical', 'changed', 'error']),
  first_difference: ReplayDifference.nullable(),
  error: z.string().optional(),
});

export const Replay = z
  .object({
    id: z.string().uuid(),
    version: z.number().int(),
    status: z.enum(['running', 'done', 'failed']),
    progress: z.object({ done: z.number().int(), total: z.number().int() }),
    summary: z.object({ conversations: z.number().int(), identical: z.number().int(), changed: z.number().int(), errors: z.number().int() }),
    results: z.array(ReplayResult),
    error: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
    expires_at: Timestamp.describe('Results are kept for seven days'),
  })
  .describe('A replay of recorded conversations against a version');
export type Replay = z.infer<typeof Replay>;

export const ReplaySummary = Replay.omit({ results: true }).describe('A replay without its per-conversation results');
export type ReplaySummary = z.infer<typeof ReplaySummary>;

export const ReplaysQuery = z.object({
  limit: z.coerce.number().int().min(1).max(50).default(20),
  cursor: z.string().max(500).optional(),
});
export type ReplayResult = z.infer<typeof ReplayResult>;

export const ReplayPage = Page(ReplaySummary);
