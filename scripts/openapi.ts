// `npm run openapi`: writes openapi.json from the contract (CI fails when the committed file differs).
import { writeFileSync } from 'node:fs';
import { getOpenApi } from '../server/src/http/openapi.js';

export const OPENAPI_FILE = new URL('../openapi.json', import.meta.url);

export function renderOpenApi(): string {
  return `${JSON.stringify(getOpenApi(), null, 2)}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = renderOpenApi();
  writeFileSync(OPENAPI_FILE, text);
  console.log(`wrote openapi.json (${Object.keys((getOpenApi() as { paths: object }).paths).length} paths, ${text.length} bytes)`);
}
