// Binary search over ascending typed arrays (vocabularies, word hashes): written here once,
// since Array.prototype has none and a Map of tens of thousands of keys costs more than the
// arrays it would index.

/** The index of `x` in ascending `a`, or -1. */
export function findSorted(a: ArrayLike<number>, x: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const k = a[mid];
    if (k === x) return mid;
    if (k < x) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Whether `a` is strictly ascending. */
export function strictlyAscending(a: ArrayLike<number>): boolean {
  for (let i = 1; i < a.length; i++) if (!(a[i - 1] < a[i])) return false;
  return true;
}
