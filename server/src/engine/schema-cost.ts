// What a tool's JSON Schema costs once its references are followed. A schema is small as text but
// can be huge as a validator: 20 `$defs` whose `anyOf` each name the next twice are 1.5 KB of JSON
// and 2^20 branches for Ajv to compile and for every tool call to walk. Ajv has no budget of its
// own, so the schema is measured here the way Ajv expands it (every `$ref` followed where it
// stands) and refused above a node count; a recursive reference, which would let the work grow
// with the nesting of the arguments instead, is refused outright.

/** Schema nodes (objects, arrays and values) a tool schema may expand to with its references followed. */
const MAX_SCHEMA_NODES = 2_000;

class Refused extends Error {}

/** Resolves a local JSON Pointer reference (`#` or `#/a/b~1c`) in `root`; undefined when it names nothing. */
function resolve(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  let cur = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/**
 * Null when `schema` expands to at most `limit` nodes with no recursive reference, else what is
 * wrong, in the author's words. Stops counting as soon as the limit is passed, so measuring a
 * bomb costs no more than measuring an acceptable schema.
 */
export function schemaCostProblem(schema: Record<string, unknown>, limit = MAX_SCHEMA_NODES): string | null {
  let nodes = 0;
  const walk = (node: unknown, refs: string[]): void => {
    if (++nodes > limit) {
      throw new Refused(`expands to more than ${limit} schema nodes once its references are followed: use fewer or smaller $refs and anyOf/oneOf branches`);
    }
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const x of node) walk(x, refs);
      return;
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        if (value !== '#' && !value.startsWith('#/')) throw new Refused(`only JSON Pointer references ("#/…") are allowed, not "${value.slice(0, 64)}"`);
        if (refs.includes(value)) throw new Refused(`"${value.slice(0, 64)}" refers to itself: recursive schemas are not allowed for tool arguments`);
        const target = resolve(schema, value);
        if (target === undefined) throw new Refused(`"${value.slice(0, 64)}" refers to nothing in the schema`);
        walk(target, [...refs, value]);
      } else {
        walk(value, refs);
      }
    }
  };
  try {
    walk(schema, []);
    return null;
  } catch (e) {
    if (e instanceof Refused) return e.message;
    throw e;
  }
}
