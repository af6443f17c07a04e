// POST /api/v1/agents/:slug/converse: bodies of the seed's converse operation.
import { z } from 'zod';
import { Citation } from './knowledge.js';

const FreeForm = z.record(z.unknown());

export const Identity = z
  .object({
    user_id: z.string().min(1).max(256).optional().describe('External user id'),
    user_name: z.string().max(256).optional(),
    user_email: z.string().max(320).optional(),
  })
  .passthrough();

/** The context envelope of the seed; unknown keys in the free-form blocks are kept. */
export const ContextEnvelope = z.object({
  version: z.literal('v1').describe('Envelope version; "v1"'),
  context: z
    .object({
      identity: Identity.optional(),
      preferences: FreeForm.optional().describe(
        'Free-form preferences; `language` picks the reply language, `time_zone` (IANA, such as Europe/Lisbon) where dates such as tomorrow are resolved',
      ),
      entitlements: FreeForm.optional().describe('Free-form entitlements, checked by capability `requires` gates'),
      customAttributes: FreeForm.optional(),
    })
    .passthrough()
    .optional(),
});
export type ContextEnvelope = z.infer<typeof ContextEnvelope>;

export const ConverseRequest = z.object({
  message: z.string().trim().min(1, 'must not be empty').describe('The user message, trimmed; at most MAX_MESSAGE_CHARS characters (default 4000)'),
  conversation_id: z.string().uuid().optional().describe('Omit to start a conversation; give to continue one'),
  context: ContextEnvelope.optional(),
  version: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      'Start the conversation on this stored version of the agent, a draft included, instead of the current one (the console playground). Only without `conversation_id`; in api_key mode it needs the admin scope',
    ),
});
export type ConverseRequest = z.infer<typeof ConverseRequest>;

export const ConversationStatus = z.enum(['active', 'paused', 'completed', 'escalated', 'abandoned']);
export type ConversationStatus = z.infer<typeof ConversationStatus>;

export const Option = z.object({ label: z.string(), value: z.string() });
export type Option = z.infer<typeof Option>;

export const ConverseResponse = z
  .object({
    conversation_id: z.string().uuid(),
    response: z.object({
      message: z.string().describe("The agent's reply text"),
      phase: z.string().describe('Id of the phase the conversation now stands in'),
      awaiting_input: z.boolean(),
      options: z.array(Option),
      citations: z
        .array(Citation)
        .optional()
        .describe('The knowledge passages the reply came from (an answer phase, or a generative phase that cited them); absent when none'),
    }),
    state: z.object({
      status: ConversationStatus,
      capability: z.string().describe('Name of the capability handling the conversation'),
    }),
  })
  .describe("The agent's reply and the conversation state");
export type ConverseResponse = z.infer<typeof ConverseResponse>;
