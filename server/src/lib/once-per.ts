// Whether a repeated event may be said again: once per `everyMs` for each key, so that a flood of
// the same refusal (a stranger's unsigned webhooks, say) writes one log line a minute, not one
// per request. The memory is bounded: past `maxKeys`, the keys said longest ago are forgotten.
export class OncePer {
  private readonly said = new Map<string, number>();

  constructor(
    private readonly everyMs = 60_000,
    private readonly maxKeys = 10_000,
  ) {}

  /** True when `key` was not said within `everyMs` before `now` (and marks it said now). */
  due(key: string, now = Date.now()): boolean {
    const last = this.said.get(key);
    if (last !== undefined && now - last < this.everyMs) return false;
    this.said.delete(key);
    this.said.set(key, now);
    if (this.said.size > this.maxKeys) {
      // Oldest first (a Map keeps insertion order, and a key said again is inserted anew).
      for (const k of this.said.keys()) {
        this.said.delete(k);
        if (this.said.size <= this.maxKeys) break;
      }
    }
    return true;
  }
}
