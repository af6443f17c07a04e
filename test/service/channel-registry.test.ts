// The channels' registry: every kind of the contract has its adapter (of that kind, with a name
// and a default API URL) and an analytics prefix of its own. The types already refuse a missing
// entry; this checks what the types cannot (an adapter filed under another kind, a shared prefix).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CHANNEL_KINDS } from '@switchboard/contract';
import { ADAPTERS } from '../../server/src/channels/index.js';
import { CHANNEL_PREFIX } from '../../server/src/domain.js';

describe('the channel registry', () => {
  it.each(CHANNEL_KINDS)('%s has an adapter of its own kind, named, with an HTTPS API', (kind) => {
    const a = ADAPTERS[kind];
    expect(a.kind).toBe(kind);
    expect(a.label.length).toBeGreaterThan(0);
    expect(new URL(a.defaultApiUrl).protocol).toBe('https:');
  });

  it('gives every channel, and the widget, an analytics prefix no other has, short enough for a measure', () => {
    const prefixes = ['web' as const, ...CHANNEL_KINDS].map((k) => CHANNEL_PREFIX[k]);
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const p of prefixes) expect(`${p}_completed`.length).toBeLessThanOrEqual(16);
    expect(Object.keys(ADAPTERS).sort()).toEqual([...CHANNEL_KINDS].sort());
  });

  it.each(CHANNEL_KINDS)("%s is in docs/channels.md's table of API addresses with its default base URL", (kind) => {
    const rows = readFileSync('docs/channels.md', 'utf8')
      .split('\n')
      .filter((l) => l.startsWith(`| \`${kind}\` | \`https://`));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain(`| \`${ADAPTERS[kind].defaultApiUrl}\` |`);
  });
});
