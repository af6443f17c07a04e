// Token estimates for budgets that must be checked before a model call is made: four characters
// a token, as the provider counts when a server reports no usage. An estimate errs high for
// English and JSON, which is the safe side for a reservation.
import type { LlmMessage, LlmTool } from './turn.js';

/** Estimated tokens of one text (an embedding's input). */
export const estimateTextTokens = (text: string): number => Math.ceil(text.length / 4);

/** Estimated input tokens of a call's messages and tools. */
export function estimateInputTokens(messages: readonly LlmMessage[], tools: readonly LlmTool[] = []): number {
  return Math.ceil((JSON.stringify(messages).length + JSON.stringify(tools).length) / 4);
}
