// A worker thread that reads one knowledge file (extract.ts) and answers { ok, extracted } or
// { ok: false, error, refused }; the pool (extractor.ts) ends it when it runs over its time.
import { parentPort } from 'node:worker_threads';
import { extract, ExtractError, type ExtractLimits } from './extract.js';

export interface ExtractRequest {
  bytes: Uint8Array;
  filename: string | null;
  mediaType: string | null;
  limits: ExtractLimits;
}

parentPort?.postMessage({ ready: true });

parentPort?.once('message', (msg: ExtractRequest) => {
  extract(msg.bytes, msg.filename, msg.mediaType, msg.limits).then(
    (extracted) => parentPort!.postMessage({ ok: true, extracted }),
    (err: unknown) => parentPort!.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err), refused: err instanceof ExtractError }),
  );
});
