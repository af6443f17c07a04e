// Which version a new conversation starts on under a traffic split, pinned to fixed vectors: the
// assignment is a contract between replicas and between releases of the service (a user must not
// move version because a replica runs a newer build), so a change to its hash fails here.
//   bucket = first 4 bytes (big-endian) of SHA-256(agent id "\n" candidate "\n" user) mod 10000
//   the candidate when bucket < share (hundredths of a percent), else the current version
import { describe, expect, it } from 'vitest';
import { startVersion } from '../../server/src/service/releases/traffic-splits.js';

const AGENT = '6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10';
const USERS = Array.from({ length: 16 }, (_, i) => `user-${i}`);
const split = (version: number, share: number) => ({ version, share, startedAt: '' });

describe('split assignment', () => {
  it('sends the same users to the candidate as every earlier build did', () => {
    expect(USERS.map((u) => startVersion(AGENT, 1, split(2, 5000), u))).toEqual([1, 1, 2, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2, 1, 1, 2]);
    // Another candidate samples users afresh.
    expect(USERS.map((u) => startVersion(AGENT, 1, split(3, 5000), u))).toEqual([1, 1, 3, 3, 1, 3, 1, 3, 3, 1, 1, 3, 1, 1, 3, 1]);
  });

  it('keeps on the candidate the users a smaller share sent there, and sends none at 0% and all at 100%', () => {
    const many = Array.from({ length: 400 }, (_, i) => `u${i}`);
    const at = (share: number) => new Set(many.filter((u) => startVersion(AGENT, 1, split(2, share), u) === 2));
    const ten = at(1000);
    const fifty = at(5000);
    for (const u of ten) expect(fifty.has(u), u).toBe(true);
    expect(ten.size).toBeGreaterThan(0);
    expect(fifty.size).toBeGreaterThan(ten.size);
    expect(at(0).size).toBe(0);
    expect(at(10_000).size).toBe(many.length);
    expect(startVersion(AGENT, 1, null, 'anyone')).toBe(1);
  });
});
