// Every problem of an agent definition in one answer: what its schema refuses, said as what was
// expected and what was found, and what validateDefinition finds in the rest (references,
// templates, patterns), so that an author does not fix one round only to meet the next.
import { AgentDefinition } from '@switchboard/contract';
import type { ZodIssue } from 'zod';
import type { FieldProblem } from '../errors.js';
import { jsonPath, pathSegments } from '../lib/json-path.js';
import { validateDefinition } from './compile.js';

type Path = (string | number)[];

const EXPECTED: Record<string, string> = {
  string: 'text',
  number: 'a number',
  integer: 'a whole number',
  bigint: 'a whole number',
  boolean: 'true or false',
  object: 'a map of keys to values',
  array: 'a list',
  null: 'null',
};

const oneOf = (options: readonly unknown[]) =>
  options.length === 1 ? JSON.stringify(options[0]) : `one of ${options.map((o) => JSON.stringify(o)).join(', ')}`;

/** Zod's name of an expected type in words; an enum's (`'a' | 'b'`) as its values. */
function expectedOf(expected: string): string {
  if (expected.startsWith("'")) return oneOf(expected.split(' | ').map((o) => o.slice(1, -1)));
  return EXPECTED[expected] ?? expected;
}

/** What a value is, in the words of a problem ("got a number"). */
function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  switch (typeof v) {
    case 'string':
      return 'text';
    case 'number':
      return `a number (${v})`;
    case 'boolean':
      return `${v}`;
    case 'object':
      return 'a map';
    default:
      return typeof v;
  }
}

function valueAt(root: unknown, path: Path): unknown {
  let v = root;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[p];
  }
  return v;
}

const samePath = (a: Path, b: Path) => a.length === b.length && a.every((p, i) => p === b[i]);

/**
 * Zod's issues as problems. A union that refused every alternative by type says which types it
 * takes (zod says only "Invalid input"); one whose value had the right type for one alternative
 * reports that alternative's own problems, which zod hides behind the union.
 */
function problemsOf(issues: ZodIssue[], raw: unknown): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const issue of issues) {
    const path = jsonPath(issue.path);
    if (issue.code === 'invalid_type' && issue.received !== 'undefined') {
      out.push({ path, message: `expected ${expectedOf(issue.expected)}; got ${describeValue(valueAt(raw, issue.path))}` });
    } else if (issue.code === 'invalid_enum_value') {
      out.push({ path, message: `expected ${oneOf(issue.options)}; got ${JSON.stringify(issue.received)}` });
    } else if (issue.code === 'invalid_union') {
      const got = describeValue(valueAt(raw, issue.path));
      const typeOnly = (i: ZodIssue) => samePath(i.path, issue.path) && (i.code === 'invalid_type' || i.code === 'invalid_literal');
      const matched = issue.unionErrors.filter((e) => !e.issues.some(typeOnly));
      if (matched.length === 1) {
        out.push(...problemsOf(matched[0].issues, raw));
      } else if (issue.message !== 'Invalid input') {
        // The schema names what it takes (LocalizedText).
        out.push({ path, message: `${issue.message}; got ${got}` });
      } else {
        const expected = new Set<string>();
        for (const e of issue.unionErrors) {
          for (const i of e.issues.filter(typeOnly)) {
            expected.add(i.code === 'invalid_type' ? expectedOf(i.expected) : JSON.stringify((i as { expected: unknown }).expected));
          }
        }
        out.push({ path, message: expected.size ? `expected ${[...expected].join(' or ')}; got ${got}` : issue.message });
      }
    } else if (issue.code === 'unrecognized_keys') {
      // One problem per key, at the key, so that a YAML answer points at its line.
      for (const k of issue.keys) out.push({ path: jsonPath([...issue.path, k]), message: `unknown key "${k}"` });
    } else {
      out.push({ path, message: issue.message });
    }
  }
  return out;
}

/**
 * Takes out of a copy what the schema refused, so the rest can be checked: unknown keys, and a
 * refused value with its key. Whether anything was taken out.
 */
function removeRefused(copy: unknown, issues: ZodIssue[]): boolean {
  let changed = false;
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      const obj = valueAt(copy, issue.path) as Record<string, unknown> | undefined;
      for (const k of issue.keys) {
        if (obj && typeof obj === 'object' && k in obj) {
          Reflect.deleteProperty(obj, k);
          changed = true;
        }
      }
      continue;
    }
    // The refused value goes with its key; a missing one, with the nearest key that holds it. A
    // list item goes with its list's key: taking the item alone out would renumber the items
    // after it, and the paths of their problems with them.
    const path = [...issue.path];
    while (path.length) {
      while (typeof path.at(-1) === 'number') path.pop();
      const key = path.pop();
      if (typeof key !== 'string') break;
      const parent = valueAt(copy, path);
      if (parent && typeof parent === 'object' && !Array.isArray(parent) && key in parent) {
        Reflect.deleteProperty(parent, key);
        changed = true;
        break;
      }
    }
  }
  return changed;
}

/**
 * A path as list indexes: validateDefinition names list items by their name or id
 * (`capabilities.order_status.phases.lookup`), the schema by position (`capabilities[0].phases[1]`).
 */
function byIndex(path: string, root: unknown): string {
  const out: (string | number)[] = [];
  let node = root;
  for (const seg of pathSegments(path)) {
    let key = seg;
    if (Array.isArray(node) && typeof seg === 'string') {
      const i = node.findIndex(
        (item: unknown) => item !== null && typeof item === 'object' && ((item as { name?: unknown }).name === seg || (item as { id?: unknown }).id === seg),
      );
      if (i >= 0) key = i;
    }
    out.push(key);
    node = node !== null && typeof node === 'object' ? (node as Record<string | number, unknown>)[key] : undefined;
  }
  return jsonPath(out);
}

/** Whether `path` is `ancestor` or lies under it. */
function within(path: string, ancestor: string): boolean {
  if (ancestor === '(root)') return true;
  return path === ancestor || path.startsWith(`${ancestor}.`) || path.startsWith(`${ancestor}[`);
}

/** Rounds of taking refused parts out before the rest is checked (each round can only shrink the copy). */
const REPAIR_ROUNDS = 4;

/**
 * Every problem of a definition as sent, schema and references alike, each with its path; the
 * parsed definition when there is none. References and templates are checked on what remains once
 * the refused parts are taken out; a problem that taking them out could have caused (one at a
 * place that held a refused part) is left out, so nothing is reported that is not in the text.
 */
export function definitionProblems(raw: unknown): { definition: AgentDefinition; problems: [] } | { definition: null; problems: FieldProblem[] } {
  const first = AgentDefinition.safeParse(raw);
  if (first.success) {
    const problems = validateDefinition(first.data);
    return problems.length ? { definition: null, problems } : { definition: first.data, problems: [] };
  }
  const problems = problemsOf(first.error.issues, raw);
  const refused: string[] = [];
  const copy: unknown = structuredClone(raw);
  let issues = first.error.issues;
  for (let round = 0; round < REPAIR_ROUNDS; round++) {
    for (const i of issues) {
      if (i.code === 'unrecognized_keys') refused.push(...i.keys.map((k) => jsonPath([...i.path, k])));
      else refused.push(jsonPath(i.path));
    }
    if (!removeRefused(copy, issues)) break;
    const again = AgentDefinition.safeParse(copy);
    if (again.success) {
      const rest = validateDefinition(again.data).filter((p) => {
        const at = byIndex(p.path, copy);
        return !refused.some((r) => within(r, at) || within(at, r));
      });
      return { definition: null, problems: [...problems, ...rest] };
    }
    issues = again.error.issues;
  }
  return { definition: null, problems };
}
