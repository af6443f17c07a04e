// Resolves messages the embedded router cannot place with the server's LLM provider
// (llm/provider.ts). Optional: without a provider it is never asked, and any failure leaves the
// embedded router's decision in place.
import type { LlmRouteReply, LlmRouteRequest } from '../engine/run.js';
import type { Completion, CompletionRequest, LlmProvider } from './llm-provider.js';

/** Examples per capability, and characters per example, the prompt lists. */
const PROMPT_EXAMPLES = 5;
const EXAMPLE_CHARS = 200;

const SYSTEM = [
  'You route a customer message to one capability of a conversational agent.',
  'Answer with a JSON object and nothing else: {"capability": "<name>"} with one of the names listed,',
  'or {"capability": null} when none of them fits the message.',
].join(' ');

export class LlmRouter {
  constructor(
    private readonly provider: LlmProvider,
    private readonly timeoutMs: number,
  ) {}

  get model(): string {
    return this.provider.model;
  }

  /** `complete`: how the call is made (the model gate, which meters it for the tenant); the provider itself by default. */
  async route(req: LlmRouteRequest, complete: (r: CompletionRequest) => Promise<Completion> = (r) => this.provider.complete(r)): Promise<LlmRouteReply> {
    const started = performance.now();
    const done = (capability: string | null, error?: string): LlmRouteReply => ({
      capability,
      model: this.provider.model,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      ...(error ? { error } : {}),
    });
    const catalogue = req.candidates
      .map(
        (c) =>
          `- ${c.name}${c.description ? `: ${c.description}` : ''}${
            c.examples.length
              ? ` (e.g. ${c.examples
                  .slice(0, PROMPT_EXAMPLES)
                  .map((e) => JSON.stringify(e.slice(0, EXAMPLE_CHARS)))
                  .join(', ')})`
              : ''
          }`,
      )
      .join('\n');
    try {
      const reply = await complete({
        temperature: 0,
        timeoutMs: this.timeoutMs,
        maxRetries: 0,
        // {"capability": "<name>"} is a few tokens: what is reserved against the tenant's budget.
        maxTokens: 64,
        messages: [
          { role: 'system', content: `${SYSTEM}\n\nCapabilities:\n${catalogue}` },
          { role: 'user', content: req.message },
        ],
      });
      const content = reply.text;
      if (!content) return done(null, 'provider answer has no message content');
      const json = /\{[\s\S]*\}/.exec(content)?.[0];
      const answer = json ? (JSON.parse(json) as { capability?: unknown }).capability : undefined;
      if (answer === null) return done(null);
      if (typeof answer !== 'string') return done(null, 'provider answer is not {"capability": …}');
      if (!req.candidates.some((c) => c.name === answer)) return done(null, `provider named an unknown capability "${answer.slice(0, 64)}"`);
      return done(answer);
    } catch (err) {
      return done(null, (err as Error).message);
    }
  }
}
