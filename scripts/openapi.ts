// `npm run openapi`: writes openapi.json from the contract, the REST clients' collections from it
// (scripts/collections.ts), and docs/people.md's roles table (scripts/people-table.ts); CI fails
// when a committed file differs.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import stringify from 'json-stringify-pretty-compact';
import { getOpenApi } from '../server/src/http/openapi.js';
import { COLLECTIONS_DIR, renderCollections } from './collections.js';
import { PEOPLE_FILE, withRoleTable } from './people-table.js';

export const OPENAPI_FILE = new URL('../openapi.json', import.meta.url);

export function renderOpenApi(): string {
  // Indented, with whatever fits on a line of 120 (a short array or object) kept on one line.
  return `${stringify(getOpenApi(), { maxLength: 120, indent: 2 })}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = renderOpenApi();
  writeFileSync(OPENAPI_FILE, text);
  console.log(`wrote openapi.json (${Object.keys((getOpenApi() as { paths: object }).paths).length} paths, ${text.length} bytes)`);
  mkdirSync(COLLECTIONS_DIR, { recursive: true });
  for (const [name, body] of Object.entries(await renderCollections(JSON.parse(text) as Record<string, unknown>))) {
    writeFileSync(new URL(name, COLLECTIONS_DIR), body);
    console.log(`wrote collections/${name} (${body.length} bytes)`);
  }
  writeFileSync(PEOPLE_FILE, withRoleTable(readFileSync(PEOPLE_FILE, 'utf8')));
  console.log('wrote the roles table of docs/people.md');
}
