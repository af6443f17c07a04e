// What the widget keeps for the visitor (the conversation's id, the visitor token): in
// localStorage when the browser allows it, so that it survives a reload and the site's tabs share
// it, and in memory when it does not (a sandboxed frame, storage refused).

export interface Saved {
  get(): Record<string, string>;
  set(v: Record<string, string>): void;
}

/** The part of the Web Storage API used. */
interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export function savedState(name: string, storage: () => StorageLike = () => (globalThis as unknown as { localStorage: StorageLike }).localStorage): Saved {
  const memory = new Map<string, string>();
  const parse = (text: string | null | undefined) => {
    try {
      const v = JSON.parse(text ?? '{}') as unknown;
      return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};
    } catch {
      return {};
    }
  };
  return {
    get() {
      try {
        return parse(storage().getItem(name) ?? memory.get(name));
      } catch {
        return parse(memory.get(name));
      }
    },
    set(v) {
      memory.set(name, JSON.stringify(v));
      try {
        storage().setItem(name, JSON.stringify(v));
      } catch {
        /* storage refused: memory only */
      }
    },
  };
}
