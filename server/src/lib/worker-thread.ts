// Worker threads of the server's pools (router training, knowledge extraction): started with the
// process's Node flags but for those a worker takes no part in, and answered `ready` once loaded.
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * The worker's execArgv: the main process's, but for its --import flags (tsx, tracing), which are
 * not for it (a worker registers tsx itself, from its *-boot.mjs), and the flags a worker refuses.
 */
let workerArgv = withoutImports(process.execArgv);

/** Node flags without `--import <module>` (and `--import=<module>`) pairs. */
function withoutImports(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--import') i++;
    else if (!argv[i].startsWith('--import=')) out.push(argv[i]);
  }
  return out;
}

/**
 * A worker for `url`, unreferenced (it never keeps the process alive), and a promise of its first
 * `{ ready: true }` message (rejected if the worker fails or stops first): a pool starts a job's
 * clock only from there, so its start-up is not counted against the job.
 */
export function startWorker(url: URL, options: Omit<WorkerOptions, 'execArgv'>): { worker: Worker; ready: Promise<void> } {
  const make = (execArgv: string[]) => new Worker(url, { ...options, execArgv });
  let worker: Worker;
  try {
    worker = make(workerArgv);
  } catch (err) {
    // Flags of the whole process (`--expose-gc`, other V8 options) are refused in a worker's
    // execArgv, and Node names them only in this error: drop them, for this and later workers.
    const named = (err as { code?: string }).code === 'ERR_WORKER_INVALID_EXEC_ARGV' && /flags: (.*)$/.exec((err as Error).message);
    if (!named) throw err;
    const refused = new Set(named[1].split(',').map((f) => f.trim()));
    workerArgv = workerArgv.filter((a) => !refused.has(a) && !refused.has(a.split('=')[0]));
    worker = make(workerArgv);
  }
  worker.unref();
  const ready = new Promise<void>((resolve, reject) => {
    const onExit = (code: number) => reject(new Error(`the worker stopped (code ${code}) before it was ready`));
    const onMessage = (m: { ready?: boolean } | null) => {
      if (!m?.ready) return;
      worker.off('message', onMessage);
      worker.off('error', reject);
      worker.off('exit', onExit);
      resolve();
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
    worker.once('exit', onExit);
  });
  ready.catch(() => undefined);
  return { worker, ready };
}
