// YAML agent definitions with their source positions, so that a problem at
// `capabilities[0].phases[1].next` can also say "line 14, column 15".
import { isMap, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import { InputError, type FieldProblem } from '../errors.js';
import { pathSegments } from './json-path.js';

export interface SourceDocument {
  value: unknown;
  /** Line and column (from 1) of the value at `path`, or of its nearest ancestor present in the source. */
  position(path: readonly (string | number)[]): { line: number; column: number } | null;
}

/**
 * Parses YAML (aliases bounded, so no "billion laughs"), or throws a 400 whose problems carry the
 * line and column of each syntax error.
 */
export function parseYamlSource(text: string): SourceDocument {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length) {
    throw new InputError(
      'The YAML is not valid',
      doc.errors.map((e) => {
        const at = lines.linePos(e.pos[0]);
        return { path: '(root)', message: e.message.split('\n')[0], line: at.line, column: at.col };
      }),
    );
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    // "Excessive alias count": aliases that would expand beyond reason.
    throw new InputError('The YAML is not valid', [{ path: '(root)', message: (e as Error).message.split('\n')[0] }]);
  }
  return {
    value,
    position(path) {
      let node: unknown = doc.contents;
      let found = node as Node | null;
      for (const key of path) {
        if (isMap(node)) node = node.get(key, true);
        else if (isSeq(node) && typeof key === 'number') node = node.get(key, true);
        // A named item of a list (capabilities.order_status, phases.lookup): the one whose name or id it is.
        else if (isSeq(node)) node = node.items.find((item) => isMap(item) && (item.get('name') === key || item.get('id') === key));
        else break;
        if (!node) break;
        found = node as Node;
      }
      const offset = found ? found.range?.[0] : undefined;
      if (offset === undefined) return null;
      const at = lines.linePos(offset);
      return { line: at.line, column: at.col };
    },
  };
}

/** Problems with the YAML line and column of each path added, where the source has one. */
export function withPositions(problems: FieldProblem[], doc: SourceDocument): FieldProblem[] {
  return problems.map((p) => {
    if (p.line !== undefined) return p;
    const at = doc.position(pathSegments(p.path));
    return at ? { ...p, line: at.line, column: at.column } : p;
  });
}
