// The process's word vectors for routing (engine/word-vectors.ts): read from their converted file,
// or converted from the installed package and cached for the next start, once per process.
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  convert,
  VECTORS_FILE_FORMAT,
  VECTORS_PACKAGE,
  WordVectors,
  type PackageJson,
  type VectorsSetting,
  type VectorsStatus,
} from '../../engine/word-vectors.js';

/** Where the installed package is, with its version; null when it is not installed. */
function findPackage(from = import.meta.url): { file: string; version: string } | null {
  try {
    const require = createRequire(from);
    const manifest = require.resolve(`${VECTORS_PACKAGE}/package.json`);
    const { version, main } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string; main: string };
    return { file: join(dirname(manifest), main), version };
  } catch {
    return null;
  }
}

/** The default place of the converted file: node_modules/.cache beside the package. */
function defaultCacheFile(pkg: { file: string; version: string }): string {
  return join(dirname(pkg.file), '..', '.cache', 'switchboard', `${VECTORS_PACKAGE}-${pkg.version}-f${VECTORS_FILE_FORMAT}.bin`);
}

/**
 * The process's vectors: the converted file when it exists (ROUTER_VECTORS_FILE, else the default
 * cache), else converted from the installed package and written there for the next start.
 */
export function loadVectors(setting: VectorsSetting): VectorsStatus {
  if (setting.mode === 'off') return { vectors: null, reason: 'off', detail: 'ROUTER_VECTORS=off: routing is lexical' };
  const pkg = findPackage();
  const file = setting.file ?? (pkg ? defaultCacheFile(pkg) : undefined);
  if (file && existsSync(file)) {
    try {
      const t = performance.now();
      const vectors = WordVectors.fromFile(readFileSync(file));
      return { vectors, detail: `word vectors ${vectors.id} read from ${file} in ${Math.round(performance.now() - t)} ms` };
    } catch (err) {
      if (!pkg) return { vectors: null, reason: 'unreadable', detail: `${file}: ${(err as Error).message}; routing is lexical` };
    }
  }
  if (!pkg) return { vectors: null, reason: 'not_installed', detail: `${VECTORS_PACKAGE} is not installed: routing is lexical` };
  const t = performance.now();
  let bytes: Buffer;
  let vectors: WordVectors;
  try {
    bytes = convert(JSON.parse(readFileSync(pkg.file, 'utf8')) as PackageJson, pkg.version);
    vectors = WordVectors.fromFile(bytes);
  } catch (err) {
    return { vectors: null, reason: 'unreadable', detail: `${pkg.file}: ${(err as Error).message}; routing is lexical` };
  }
  let cached = 'not cached';
  if (file) {
    try {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(`${file}.tmp`, bytes);
      renameSync(`${file}.tmp`, file);
      cached = `cached at ${file}`;
    } catch (err) {
      cached = `not cached (${(err as Error).message})`;
    }
  }
  return { vectors, detail: `word vectors ${vectors.id} converted from ${pkg.file} in ${Math.round(performance.now() - t)} ms, ${cached}` };
}

const loaded = new Map<string, VectorsStatus>();

/**
 * Makes `setting` the process's vectors, loading them once per setting (a process's apps share
 * them). Returns how they were come by, and whether this call loaded them.
 */
export function useVectors(setting: VectorsSetting): VectorsStatus & { loadedNow: boolean } {
  const key = setting.mode === 'off' ? 'off' : `auto:${setting.file ?? ''}`;
  let status = loaded.get(key);
  const loadedNow = !status;
  if (!status) loaded.set(key, (status = loadVectors(setting)));
  return { ...status, loadedNow };
}
