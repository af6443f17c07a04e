// Durations as buckets for the analytics medians (table agent_closes).

/**
 * The bucket of a duration: exact seconds below a minute, then buckets 5% wide (their lower
 * bounds), so that an hour holds a few dozen of them whatever its traffic.
 */
export function secondsBucket(seconds: number): number {
  if (seconds < 60) return Math.max(0, Math.floor(seconds));
  return Math.floor(60 * 1.05 ** Math.floor(Math.log(seconds / 60) / Math.log(1.05) + 1e-9));
}
