// Resolves messages the embedded router cannot place with an OpenAI-compatible Chat Completions
// provider (ROUTER_LLM_URL, ROUTER_LLM_MODEL, ROUTER_LLM_API_KEY). Optional: without a URL it is
// never asked, and any failure leaves the embedded router's decision in place.
import { request } from 'undici';
import type { LlmRouteReply, LlmRouteRequest } from '../engine/run.js';

export interface LlmRouterOptions {
  url: string;
  model: string;
  apiKey?: string;
  timeoutMs: number;
}

const SYSTEM = [
  'You route a customer message to one capability of a conversational agent.',
  'Answer with a JSON object and nothing else: {"capability": "<name>"} with one of the names listed,',
  'or {"capability": null} when none of them fits the message.',
].join(' ');

export class LlmRouter {
  constructor(private readonly opts: LlmRouterOptions) {}

  get model(): string {
    return this.opts.model;
  }

  async route(req: LlmRouteRequest): Promise<LlmRouteReply> {
    const started = performance.now();
    const done = (capability: string | null, error?: string): LlmRouteReply => ({
      capability,
      model: this.opts.model,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      ...(error ? { error } : {}),
    });
    const catalogue = req.candidates
      .map(
        (c) =>
          `- ${c.name}${c.description ? `: ${c.description}` : ''}${c.examples.length ? ` (e.g. ${c.examples.map((e) => JSON.stringify(e)).join(', ')})` : ''}`,
      )
      .join('\n');
    try {
      const res = await request(`${this.opts.url.replace(/\/+$/, '')}/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}),
        },
        body: JSON.stringify({
          model: this.opts.model,
          temperature: 0,
          messages: [
            { role: 'system', content: `${SYSTEM}\n\nCapabilities:\n${catalogue}` },
            { role: 'user', content: req.message },
          ],
        }),
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      const text = await res.body.text();
      if (res.statusCode >= 300) return done(null, `provider answered HTTP ${res.statusCode}`);
      const reply = JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] } | null;
      const content = reply?.choices?.[0]?.message?.content;
      if (typeof content !== 'string') return done(null, 'provider answer has no message content');
      const json = /\{[\s\S]*\}/.exec(content)?.[0];
      const answer = json ? (JSON.parse(json) as { capability?: unknown }).capability : undefined;
      if (answer === null) return done(null);
      if (typeof answer !== 'string') return done(null, 'provider answer is not {"capability": …}');
      if (!req.candidates.some((c) => c.name === answer)) return done(null, `provider named an unknown capability "${answer.slice(0, 64)}"`);
      return done(answer);
    } catch (err) {
      const e = err as Error;
      return done(
        null,
        e.name === 'TimeoutError' || e.name === 'AbortError' ? `no answer within ${this.opts.timeoutMs} ms` : `provider unreachable: ${e.message}`,
      );
    }
  }
}
