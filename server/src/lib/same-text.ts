// Comparing a secret a request presents with the one expected, in time that does not depend on
// where they differ or on their lengths (both are hashed to 32 bytes first).
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export function sameText(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}
