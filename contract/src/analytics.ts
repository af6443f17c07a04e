// Analytics (docs/observability.md, "Analytics"): how an agent's conversations went over a
// window of whole UTC hours, computed in the database from hourly counters.
import { z } from 'zod';
import { CHANNEL_KINDS } from './channels.js';
import { TimeFilter, Timestamp } from './common.js';

export const AnalyticsQuery = z
  .object({
    from: TimeFilter.optional().describe('Start of the window (rounded down to the hour); default `to` minus 7 days'),
    to: TimeFilter.optional().describe('End of the window, exclusive (rounded up to the hour); default now'),
    interval: z.enum(['hour', 'day']).default('day').describe('Bucket of `series` (UTC)'),
  })
  .strict();

const Count = z.number().int().min(0);
const Rate = z.number().min(0).max(1).nullable();

const Counts = z.object({ started: Count, completed: Count, escalated: Count, abandoned: Count });

const Interval = z
  .tuple([z.number(), z.number()])
  .nullable()
  .describe('95% Wilson score interval of the rate: a wide one says there are too few conversations to read it');

const VersionFigures = Counts.extend({
  version: z.number().int(),
  closed: Count.describe('completed + escalated + abandoned: the conversations behind containment and escalation'),
  routed: Count.describe('Routing decisions: those behind the fallback rate'),
  fallback: Count,
  rates: z.object({
    containment: Rate,
    escalation: Rate,
    fallback: Rate,
    completion: Rate.describe('completed / started; null with none started'),
  }),
  intervals: z.object({ containment: Interval, escalation: Interval, fallback: Interval, completion: Interval }),
  turns_per_conversation_p50: z.number().nullable(),
  duration_seconds_p50: z.number().nullable(),
});

const AgentAnalyticsSchema = z.object({
  from: Timestamp,
  to: Timestamp,
  interval: z.enum(['hour', 'day']),
  conversations: Counts.extend({
    active: Count.describe('Conversations started in the window that are still open with the agent (active or paused)'),
  }).describe('started: conversations that began in the window; completed, escalated, abandoned: conversations that reached that status in it'),
  rates: z.object({
    containment: Rate.describe('completed / (completed + escalated + abandoned); null with no closes'),
    escalation: Rate.describe('escalated / (completed + escalated + abandoned)'),
    abandonment: Rate.describe('abandoned / (completed + escalated + abandoned)'),
    fallback: Rate.describe("Routing decisions that went to the agent's fallback / all routing decisions; null with none"),
  }),
  turns_per_conversation_p50: z.number().nullable().describe('Median turns (user and agent) of conversations completed or abandoned in the window'),
  duration_seconds_p50: z.number().nullable().describe('Median seconds from start to close of conversations completed or abandoned in the window'),
  capabilities: z
    .array(z.object({ name: z.string(), conversations: Count.describe('Started with this capability'), completed: Count, escalated: Count, abandoned: Count }))
    .describe('Per capability, most conversations first'),
  outcomes: z.array(z.object({ outcome: z.string(), count: Count })).describe('Closes per outcome, most first'),
  series: z.array(Counts.extend({ start: Timestamp })).describe('Every bucket of the window, empty ones included, oldest first'),
  channels: z
    .array(Counts.extend({ channel: z.enum(['api', 'web', ...CHANNEL_KINDS]) }))
    .describe(
      'The same counts per channel: web, conversations of the web chat widget; slack, telegram, whatsapp, sms, of those messaging channels; api, the others',
    ),
  versions: z.array(VersionFigures).describe('The same figures per agent version, newest first: compare a split’s candidate with the current version'),
  knowledge: z
    .object({
      sources: z
        .array(z.object({ source: z.string(), cited: Count.describe("The agent's answers that cited it") }))
        .describe('The knowledge sources answers cited in the window, most cited first'),
      unanswered: Count.describe("Questions the agent's answer phases found nothing good enough for (each is in the review inbox as `unanswered`)"),
    })
    .describe("What the agent's knowledge sources answered (docs/knowledge.md)"),
});
export type AgentAnalytics = z.infer<typeof AgentAnalyticsSchema>;
// Typed by name, so that the contract's declarations stay within what TypeScript serializes.
export const AgentAnalytics: z.ZodType<AgentAnalytics> = AgentAnalyticsSchema;
