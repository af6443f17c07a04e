// Starts the extraction worker from its TypeScript source: the worker thread registers tsx itself,
// since loader flags given to the main process do not reach worker threads on every Node version.
import { register } from 'tsx/esm/api';

register();
await import('./extract-worker.ts');
