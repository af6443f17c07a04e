// A worker thread for knowledge: it reads files (extract.ts) and builds search indexes' postings
// (engine/knowledge.ts), one message at a time, and answers each with { ok, … } or { ok: false,
// error, refused }; the pool (extractor.ts) ends it when it runs over its time.
import { parentPort } from 'node:worker_threads';
import { PostingsBuilder, type PostingsData } from '../../engine/knowledge-index.js';
import { extract, ExtractError, type Extracted, type ExtractLimits } from './extract.js';

export type WorkerRequest =
  | { kind: 'extract'; bytes: Uint8Array; filename: string | null; mediaType: string | null; limits: ExtractLimits }
  | { kind: 'index'; titles: (string | null)[]; texts: string[] };

/** `refused`: the request was refused for what it holds (an ExtractError), and the worker is sound. */
export type WorkerReply = { ok: true; extracted: Extracted } | { ok: true; postings: PostingsData } | { ok: false; error: string; refused: boolean };

function index(titles: (string | null)[], texts: string[]): PostingsData {
  const builder = new PostingsBuilder(texts.length);
  for (let i = 0; i < texts.length; i++) builder.add(i, titles[i] ?? null, texts[i]);
  return builder.finish();
}

parentPort?.postMessage({ ready: true });

parentPort?.on('message', (msg: WorkerRequest) => {
  const failed = (err: unknown) =>
    parentPort!.postMessage({
      ok: false,
      error: err instanceof Error ? err.message : String(err),
      refused: err instanceof ExtractError,
    } satisfies WorkerReply);
  if (msg.kind === 'index') {
    try {
      const postings = index(msg.titles, msg.texts);
      // The typed arrays move to the pool's thread rather than being copied.
      parentPort!.postMessage({ ok: true, postings } satisfies WorkerReply, [
        postings.offsets.buffer as ArrayBuffer,
        postings.docs.buffer as ArrayBuffer,
        postings.impacts.buffer as ArrayBuffer,
      ]);
    } catch (err) {
      failed(err);
    }
    return;
  }
  extract(msg.bytes, msg.filename, msg.mediaType, msg.limits).then(
    (extracted) => parentPort!.postMessage({ ok: true, extracted } satisfies WorkerReply),
    failed,
  );
});
