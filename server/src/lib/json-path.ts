/** `['capabilities', 1, 'phases', 2, 'next']` → `capabilities[1].phases[2].next` (`prefix` first, `(root)` for none). */
export function jsonPath(path: (string | number)[], prefix = ''): string {
  let out = prefix;
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${p}` : p;
  }
  return out || '(root)';
}

/** `capabilities[0].phases[1].next` → ['capabilities', 0, 'phases', 1, 'next']. */
export function pathSegments(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push((m[2] as string | undefined) !== undefined ? Number(m[2]) : m[1]);
  return out;
}
