// `npm run lint:openapi`: lints openapi.json with Redocly's `recommended` rules and Spectral's
// `spectral:oas` ruleset (both pinned in package.json) and prints every finding; exits 1 on any
// error or warning. The same check runs in `npm test` (test/openapi.test.ts).
import { readFileSync } from 'node:fs';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import spectralCore from '@stoplight/spectral-core';
import spectralParsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';

const { Document, Spectral } = spectralCore;

export interface Finding {
  tool: 'redocly' | 'spectral';
  severity: 'error' | 'warn';
  rule: string;
  message: string;
  where: string;
}

export async function lintOpenApi(text: string): Promise<Finding[]> {
  const findings: Finding[] = [];
  const config = await createConfig({ extends: ['recommended'] });
  const doc = JSON.parse(text) as { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> };
  // A sign-in step answers with a redirect, never a 2XX: Redocly's rule has no option for it.
  const redirects = (pointer: string) => {
    const m = /^#\/paths\/([^/]+)\/([a-z]+)\/responses$/.exec(pointer);
    const op = m ? doc.paths[m[1].replace(/~1/g, '/').replace(/~0/g, '~')]?.[m[2]] : undefined;
    return Object.keys(op?.responses ?? {}).some((status) => /^3\d\d$/.test(status));
  };
  for (const p of await lintFromString({ source: text, absoluteRef: 'openapi.json', config })) {
    if (p.ignored || (p.severity !== 'error' && p.severity !== 'warn')) continue;
    if (p.ruleId === 'operation-2xx-response' && redirects(p.location[0]?.pointer ?? '')) continue;
    findings.push({ tool: 'redocly', severity: p.severity, rule: p.ruleId, message: p.message, where: p.location[0]?.pointer ?? '' });
  }
  const spectral = new Spectral();
  spectral.setRuleset(oas as never);
  for (const r of await spectral.run(new Document(text, spectralParsers.Json, 'openapi.json'))) {
    // Spectral severities: 0 error, 1 warning, 2 information, 3 hint.
    if (r.severity > 1) continue;
    findings.push({ tool: 'spectral', severity: r.severity === 0 ? 'error' : 'warn', rule: String(r.code), message: r.message, where: r.path.join('.') });
  }
  return findings;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = readFileSync(new URL('../openapi.json', import.meta.url), 'utf8');
  const findings = await lintOpenApi(text);
  for (const f of findings) console.log(`${f.tool.padEnd(8)} ${f.severity.padEnd(5)} ${f.rule}: ${f.message} (${f.where})`);
  const count = (tool: string, sev: string) => findings.filter((f) => f.tool === tool && f.severity === sev).length;
  console.log(
    `openapi.json (${text.length} bytes): Redocly recommended ${count('redocly', 'error')} errors, ${count('redocly', 'warn')} warnings; ` +
      `Spectral spectral:oas ${count('spectral', 'error')} errors, ${count('spectral', 'warn')} warnings`,
  );
  process.exit(findings.length ? 1 : 0);
}
