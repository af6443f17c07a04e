// A worker thread that reads knowledge files (extract.ts), one message at a time, and answers
// each with { ok, extracted } or { ok: false, error, refused }; the pool (extractor.ts) ends it
// when it runs over its time.
import { parentPort } from 'node:worker_threads';
import { extract, ExtractError, type Extracted, type ExtractLimits } from './extract.js';

export interface ExtractRequest {
  bytes: Uint8Array;
  filename: string | null;
  mediaType: string | null;
  limits: ExtractLimits;
}

/** `refused`: the file was refused for what it holds (an ExtractError), and the worker is sound. */
export type ExtractReply = { ok: true; extracted: Extracted } | { ok: false; error: string; refused: boolean };

parentPort?.postMessage({ ready: true });

parentPort?.on('message', (msg: ExtractRequest) => {
  extract(msg.bytes, msg.filename, msg.mediaType, msg.limits).then(
    (extracted) => parentPort!.postMessage({ ok: true, extracted } satisfies ExtractReply),
    (err: unknown) =>
      parentPort!.postMessage({
        ok: false,
        error: err instanceof Error ? err.message : String(err),
        refused: err instanceof ExtractError,
      } satisfies ExtractReply),
  );
});
