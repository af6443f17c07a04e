// `agents pull`: a definition stored on the server written back into the team's agent file, edited
// where the two differ and nowhere else, so that the file's comments, key order, quoting, flow
// style and ${NAME} placeholders stay. A value the file reads as ${NAME} is compared as `apply`
// would send it (filled in), and kept when only the filled-in value differs, with a note.
//
// The edits are spliced into the file's text at the positions the YAML library's parser gives
// (a changed scalar, items appended to a list, a new key at the end of a map: what review actions
// and small edits make). Anything else, or a splice whose result does not read back as the
// server's definition, falls back to the library's document model, which keeps comments and
// order but writes flow collections in a style of its own. No library edits YAML text in place
// (yaml's document model re-renders it whole; its CST can change only scalars), hence the splices.
import { extname } from 'node:path';
import { isMap, isScalar, isSeq, parseDocument, stringify, type Document, type Node } from 'yaml';
import type { AgentDefinition } from '@switchboard/contract';
import { definitionProblems } from './engine/definition-problems.js';
import { canonicalJson } from './lib/canonical.js';
import { expandVariables } from './agents-loader.js';

export interface PulledFile {
  text: string;
  /** Dotted paths the merge changed, added or removed. */
  changed: string[];
  /** ${NAME} values kept although the server's value differs (the file's placeholder wins). */
  kept: { path: string; server: unknown }[];
}

type Path = (string | number)[];
/** A change to the text: `text` replaces [from, to). */
interface Splice {
  from: number;
  to: number;
  text: string;
}
interface Seen {
  changed: string[];
  kept: PulledFile['kept'];
  /** Null once a change could not be spliced. */
  splices: Splice[] | null;
  source: string;
}

const same = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const dotted = (p: Path) =>
  p
    .map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`))
    .join('')
    .replace(/^\./, '');

/** A definition as a new YAML file. */
export function definitionYaml(definition: AgentDefinition): string {
  return stringify(definition, { lineWidth: 120 });
}

/** The file's text read as `apply` reads it: placeholders filled from `env`, the schema's defaults filled in. */
function asApplied(text: string, env: NodeJS.ProcessEnv): unknown {
  const filled = parseDocument(expandVariables(text, env).text).toJS() as unknown;
  return definitionProblems(filled).definition ?? filled;
}

/**
 * The agent file `text` (YAML or JSON, by `file`'s extension) with `server`'s definition merged
 * in. A value left to its default, or spelt another way, is no change.
 */
export function mergeIntoFile(file: string, text: string, server: AgentDefinition, env: NodeJS.ProcessEnv = process.env): PulledFile {
  const doc = parseDocument(text);
  if (doc.errors.length) throw new Error(`${file} is not valid YAML: ${doc.errors[0].message.split('\n')[0]}`);
  const json = extname(file) === '.json';
  const seen: Seen = { changed: [], kept: [], splices: json ? null : [], source: text };
  merge(doc, [], asApplied(text, env), server, seen);
  if (!seen.changed.length) return { text, changed: [], kept: seen.kept };
  const result = { changed: seen.changed, kept: seen.kept };
  if (seen.splices) {
    let spliced = text;
    for (const s of [...seen.splices].sort((a, b) => b.from - a.from)) spliced = spliced.slice(0, s.from) + s.text + spliced.slice(s.to);
    const check = parseDocument(spliced);
    if (!check.errors.length && same(asApplied(spliced, env), mergedExpectation(doc, env))) return { text: spliced, ...result };
  }
  return { text: json ? `${JSON.stringify(doc.toJS(), null, 2)}\n` : doc.toString({ lineWidth: 0 }), ...result };
}

/** What the merged document model reads as, which a splice must read as too. */
function mergedExpectation(doc: Document, env: NodeJS.ProcessEnv): unknown {
  return asApplied(doc.toString({ lineWidth: 0 }), env);
}

function merge(doc: Document, path: Path, ours: unknown, theirs: unknown, seen: Seen): void {
  if (same(ours, theirs)) return;
  const node = (path.length ? doc.getIn(path, true) : doc.contents) as Node | null | undefined;
  if (isScalar(node) && typeof node.value === 'string' && /\$\{[A-Z]/.test(node.value)) {
    seen.kept.push({ path: dotted(path), server: theirs });
    return;
  }
  if (isObject(ours) && isObject(theirs) && isMap(node)) {
    for (const key of Object.keys(ours)) {
      if (key in theirs || !doc.hasIn([...path, key])) continue;
      doc.deleteIn([...path, key]);
      seen.changed.push(dotted([...path, key]));
      seen.splices = null;
    }
    for (const [key, value] of Object.entries(theirs)) {
      if (key in ours && doc.hasIn([...path, key])) merge(doc, [...path, key], ours[key], value, seen);
      else if (!(key in ours) || !same(ours[key], value)) {
        if (seen.splices) spliceNewKey(seen, node, key, value);
        doc.setIn([...path, key], doc.createNode(value));
        seen.changed.push(dotted([...path, key]));
      }
    }
    return;
  }
  if (Array.isArray(ours) && Array.isArray(theirs) && isSeq(node)) {
    if (ours.length === theirs.length) {
      ours.forEach((o, i) => merge(doc, [...path, i], o, theirs[i], seen));
      return;
    }
    // Items added at the end (a reviewer's examples): appended, the file's items untouched.
    if (theirs.length > ours.length && same(ours, theirs.slice(0, ours.length))) {
      const added = theirs.slice(ours.length);
      if (seen.splices) spliceAppend(seen, node, added);
      for (const item of added) node.add(doc.createNode(item));
      seen.changed.push(...added.map((_, i) => dotted([...path, ours.length + i])));
      return;
    }
  }
  if (seen.splices && isScalar(node) && node.range && !isObject(theirs) && !Array.isArray(theirs)) {
    const quoted = node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE';
    seen.splices.push({ from: node.range[0], to: node.range[1], text: quoted && typeof theirs === 'string' ? JSON.stringify(theirs) : inline(theirs) });
  } else seen.splices = null;
  if (path.length === 0) doc.contents = doc.createNode(theirs);
  else doc.setIn(path, doc.createNode(theirs));
  seen.changed.push(dotted(path) || '(the whole definition)');
}

/** A scalar or small value on one line, as YAML writes it in flow. */
const inline = (v: unknown) => stringify(v, { collectionStyle: 'flow', lineWidth: 0 }).trimEnd();

/** The indentation of the line `at` is on, and its column. */
function columnOf(source: string, at: number): number {
  return at - (source.lastIndexOf('\n', at - 1) + 1);
}

/** YAML for `value` under a block key or item, each line indented by `indent` spaces. */
function block(value: unknown, indent: number): string {
  return stringify(value, { lineWidth: 0 })
    .trimEnd()
    .split('\n')
    .map((l) => ' '.repeat(indent) + l)
    .join('\n');
}

function spliceNewKey(seen: Seen, map: Node, key: string, value: unknown): void {
  const items = isMap(map) ? map.items : [];
  const last = items.at(-1);
  const first = items[0]?.key as Node | undefined;
  if (!isMap(map) || map.flow || !first?.range || !last) {
    seen.splices = null;
    return;
  }
  let end = ((last.value as Node | null)?.range ?? (last.key as Node).range)![1];
  // A block value's range takes in the line break after it.
  while (end > 0 && /\s/.test(seen.source[end - 1])) end--;
  const indent = columnOf(seen.source, first.range[0]);
  const body = isObject(value) || Array.isArray(value) ? `${key}:\n${block(value, indent + 2)}` : `${key}: ${inline(value)}`;
  // After the last pair's value (its comment and blank lines stay where they are).
  seen.splices!.push({ from: end, to: end, text: `\n${' '.repeat(indent)}${body}` });
}

function spliceAppend(seen: Seen, seq: Node, added: unknown[]): void {
  const items = isSeq(seq) ? (seq.items as Node[]) : [];
  const last = items.at(-1)?.range;
  const first = items[0]?.range;
  if (!isSeq(seq) || !last || !first || added.some((a) => isObject(a) || Array.isArray(a))) {
    seen.splices = null;
    return;
  }
  const src = seen.source;
  if (!seq.flow) {
    const dash = src.lastIndexOf('-', first[0]);
    const indent = columnOf(src, dash);
    seen.splices!.push({ from: last[1], to: last[1], text: added.map((a) => `\n${' '.repeat(indent)}- ${inline(a)}`).join('') });
    return;
  }
  // A flow list: on one line `[a, b]`, or one item per line with a trailing comma (Prettier's style).
  const after = src.slice(last[1]).match(/^\s*(,?)/)!;
  if (src.slice(first[0], last[1]).includes('\n') || (after[1] === ',' && src.slice(last[1], seq.range![1]).includes('\n'))) {
    const pad = ' '.repeat(columnOf(src, first[0]));
    if (after[1] === ',') {
      const at = last[1] + after[0].length;
      seen.splices!.push({ from: at, to: at, text: added.map((a) => `\n${pad}${inline(a)},`).join('') });
    } else seen.splices!.push({ from: last[1], to: last[1], text: added.map((a) => `,\n${pad}${inline(a)}`).join('') });
  } else {
    seen.splices!.push({ from: last[1], to: last[1], text: added.map((a) => `, ${inline(a)}`).join('') });
  }
}
