// Test conversations (docs/operations.md): scripted user messages with what the agent should
// answer, run in memory against a definition, with actions and model replies given by the test.
import { z } from 'zod';

const Expectation = z
  .object({
    capability: z.string().optional(),
    phase: z.string().optional(),
    awaiting_input: z.boolean().optional(),
    status: z.enum(['active', 'paused', 'completed', 'escalated', 'abandoned']).optional(),
    outcome: z.string().nullable().optional(),
    reply: z.string().max(2000).optional().describe('A substring of the reply, or /regex/flags (RE2 syntax; flag i)'),
    slots: z.record(z.unknown()).optional().describe('Slots that must hold these values'),
    kept: z
      .string()
      .max(4000)
      .optional()
      .describe("A substring of the user's message as the agent's privacy policy keeps it (docs/privacy.md), or /regex/flags: [CARD …1111]"),
    masked: z
      .record(z.string(), z.number().int().min(0))
      .optional()
      .describe("What the agent's privacy policy masked in the turn's two messages, by type: { card: 1 } (a type left out is not checked; 0: none)"),
  })
  .strict();

export const TestStep = z
  .object({
    user: z.string().min(1).max(4000),
    expect: Expectation.optional(),
  })
  .strict();

const TestCaseSchema = z
  .object({
    name: z.string().min(1).max(200),
    context: z.record(z.unknown()).optional().describe("The context envelope's `context` (identity, preferences, entitlements…)"),
    actions: z
      .record(
        z
          .object({ status: z.number().int().min(100).max(599).default(200), body: z.unknown().optional().describe('The JSON body the action answers') })
          .strict(),
      )
      .optional()
      .describe('What each action answers; an action without an answer fails (status 0): nothing goes out'),
    llm: z
      .array(
        z
          .object({
            text: z.string().max(20_000).optional(),
            tool_calls: z
              .array(z.object({ name: z.string(), arguments: z.record(z.unknown()).default({}) }).strict())
              .max(20)
              .optional(),
          })
          .strict(),
      )
      .max(100)
      .optional()
      .describe('Model replies for generative phases, in order'),
    steps: z.array(TestStep).min(1).max(100),
  })
  .strict();
export type TestCase = z.infer<typeof TestCaseSchema>;
/** A test case as sent (an action's status may be left out). */
export type TestCaseInput = z.input<typeof TestCaseSchema>;
// Typed by name, so that the contract's declarations stay within what TypeScript serializes.
export const TestCase: z.ZodType<TestCase, z.ZodTypeDef, TestCaseInput> = TestCaseSchema;

export const TestFile = z
  .object({
    agent: z.string().min(1).max(64).describe('The slug: the definition is the file <agent>.yaml (or .json) beside this one'),
    tests: z.array(TestCase).min(1).max(200),
  })
  .strict();

export const RunTests = z.object({
  version: z.number().int().min(1).optional().describe('The version to test; the current one when absent'),
  tests: z.array(TestCase).min(1).max(50),
});

const Observed = z.object({
  reply: z.string(),
  capability: z.string(),
  phase: z.string(),
  awaiting_input: z.boolean(),
  status: z.string(),
  outcome: z.string().nullable(),
  slots: z.record(z.unknown()),
  kept: z.string().optional().describe("The user's message as the agent's privacy policy keeps it (only for an agent with one)"),
  masked: z.record(z.string(), z.number().int()).optional().describe('What the policy masked in the two messages, by type (only for an agent with one)'),
});

export const TestResults = z
  .object({
    version: z.number().int().nullable().describe('The version tested (null for a definition tested from a file)'),
    passed: z.number().int(),
    failed: z.number().int(),
    results: z.array(
      z.object({
        name: z.string(),
        passed: z.boolean(),
        steps: z.array(
          z.object({
            user: z.string(),
            passed: z.boolean(),
            expected: z.record(z.unknown()),
            actual: Observed,
            failures: z.array(z.string()).describe('What did not match, one line each'),
            routing: z
              .object({
                strategy: z.string(),
                reason: z.string().optional(),
                candidates: z.array(z.object({ capability: z.string(), score: z.number() })),
              })
              .optional()
              .describe('How the message was routed, when it was: the top candidates and their scores'),
          }),
        ),
      }),
    ),
  })
  .describe('Results of test conversations; nothing was stored');
export type TestResults = z.infer<typeof TestResults>;
