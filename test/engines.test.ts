// The Node.js the project says it needs is one that every installed package accepts: `npm ci` on
// it prints no EBADENGINE warning, and the README says the same version.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

describe('engines', () => {
  it('every package in the lockfile accepts the oldest Node.js the project supports, which the README names', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { engines?: { node?: string } | string[] }> };
    const oldest = semver.minVersion(pkg.engines.node)!.version;
    const refusing = Object.entries(lock.packages)
      .map(([path, p]) => [path, !Array.isArray(p.engines) ? p.engines?.node : undefined] as const)
      .filter(([, range]) => range !== undefined && !semver.satisfies(oldest, range))
      .map(([path, range]) => `${path} wants node ${range}`);
    expect(refusing).toEqual([]);
    expect(readFileSync('README.md', 'utf8')).toContain(`Needs Node.js ${oldest.replace(/\.0$/, '')} or newer`);
  });
});
