// A scripted OpenAI-compatible Chat Completions server on loopback: it answers each call with
// the next scripted reply (text, tool calls, an HTTP error, a delay, a stream in pieces) and
// records what it was sent, so tests can check prompts, tools and the absence of secrets.
import type { ServerResponse } from 'node:http';
import { json, startBackend, type Backend } from './servers.js';

export interface ScriptedReply {
  text?: string;
  toolCalls?: { name: string; arguments: unknown }[];
  /** An HTTP error status instead of an answer. */
  status?: number;
  retryAfterSeconds?: number;
  delayMs?: number;
  /** Token counts reported; null: none (the server then estimates). */
  usage?: { prompt: number; completion: number } | null;
  /** Streamed calls: the text in these pieces (default: word by word). */
  pieces?: string[];
  /** Sent as the body as it is (a malformed answer). */
  raw?: string;
}

export interface FakeLlm {
  /** The base URL to configure (ends in /v1). */
  url: string;
  /** Bodies of the chat completion calls received, in order. */
  calls: { body: any; headers: Record<string, unknown>; at: number }[];
  script(...replies: ScriptedReply[]): void;
  /** Replies not yet used. */
  pending(): number;
  /** The most calls it was answering at once since the last reset. */
  maxInFlight(): number;
  reset(): void;
  close(): Promise<void>;
}

function stream(res: ServerResponse, r: ScriptedReply): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: 'fake-model' };
  const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
  send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
  const pieces = r.pieces ?? (r.text ? (r.text.match(/\S+\s*/g) ?? [r.text]) : []);
  let i = 0;
  const next = () => {
    if (i < pieces.length) {
      send({ ...base, choices: [{ index: 0, delta: { content: pieces[i++] }, finish_reason: null }] });
      setTimeout(next, 5);
      return;
    }
    (r.toolCalls ?? []).forEach((c, index) =>
      send({
        ...base,
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name: c.name, arguments: argText(c.arguments) } }] },
            finish_reason: null,
          },
        ],
      }),
    );
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: r.toolCalls?.length ? 'tool_calls' : 'stop' }] });
    if (r.usage !== null) send({ ...base, choices: [], usage: usageOf(r) });
    res.end('data: [DONE]\n\n');
  };
  next();
}

const argText = (a: unknown) => (typeof a === 'string' ? a : JSON.stringify(a));
const usageOf = (r: ScriptedReply) => {
  const u = r.usage ?? { prompt: 100, completion: 20 };
  return { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.prompt + u.completion };
};

export async function startFakeLlm(): Promise<FakeLlm> {
  let queue: ScriptedReply[] = [];
  const calls: FakeLlm['calls'] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const backend: Backend = await startBackend((req, res, body) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) return json(res, 404, { error: { message: 'not found' } });
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    res.once('close', () => inFlight--);
    const parsed = JSON.parse(body);
    calls.push({ body: parsed, headers: req.headers, at: performance.now() });
    const r = queue.shift();
    if (!r) return json(res, 500, { error: { message: 'the script has no more replies' } });
    setTimeout(() => {
      if (res.destroyed) return;
      if (r.status && r.status !== 200) {
        if (r.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(r.retryAfterSeconds));
        return json(res, r.status, { error: { message: `scripted ${r.status}` } });
      }
      if (r.raw !== undefined) {
        res.setHeader('content-type', 'application/json');
        return res.end(r.raw);
      }
      if (parsed.stream) return stream(res, r);
      const toolCalls = (r.toolCalls ?? []).map((c, i) => ({ id: `call_${i}`, type: 'function', function: { name: c.name, arguments: argText(c.arguments) } }));
      json(res, 200, {
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: 1,
        model: 'fake-model',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: r.text ?? null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
            finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
          },
        ],
        ...(r.usage === null ? {} : { usage: usageOf(r) }),
      });
    }, r.delayMs ?? 0);
  });
  return {
    url: `${backend.url}/v1`,
    calls,
    script: (...replies) => queue.push(...replies),
    pending: () => queue.length,
    maxInFlight: () => maxInFlight,
    reset: () => {
      queue = [];
      calls.length = 0;
      maxInFlight = inFlight;
    },
    close: () => backend.close(),
  };
}
