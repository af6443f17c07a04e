// The client package's declarations, written from the TypeScript checker's view of the client:
// every type the client exports (the contract's among them) as a plain structural type under its
// own name, the calls of `sb.api` and `sb.ops` as interfaces of plain argument and response
// types, and the Zod schemas as `Schema<Name>` (what they parse to). tsc's own declarations of
// the client carry the contract's Zod types (about 4 MB, which a consumer's type-check
// instantiates through ts-rest's inference: tens of seconds with skipLibCheck off); these say the
// same in under 100 KB and import nothing (`npm run bench:client`).
// No library prints a checker's types as standalone declarations (typeToString inlines every
// named type and prints Zod's own generics for passthrough objects), hence this printer.
import ts from 'typescript';
import { join } from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { contract } from '@switchboard/contract';

/** A printer of types as plain TypeScript, naming the types registered by name. */
class Printer {
  /** Fully expanded text → the name it is exported under. */
  readonly names = new Map<string, string>();
  private readonly fullMemo = new Map<ts.Type, string>();
  private readonly namedMemo = new Map<ts.Type, string>();

  constructor(private readonly checker: ts.TypeChecker) {}

  /** The platform's types (lib.*.d.ts, @types/node), printed by their names; every other is expanded. */
  private isExternal(t: ts.Type): boolean {
    // Aliases (Record, Omit, Partial…) are expanded: their arguments may be the client's own types.
    if (t.aliasSymbol) return false;
    const sym = t.getSymbol();
    // An anonymous type literal (`__type`) is expanded wherever it was written.
    if (!sym || sym.name.startsWith('__')) return false;
    const file = sym.declarations?.[0]?.getSourceFile().fileName ?? '';
    return /\/typescript\/lib\/lib\..*\.d\.ts$/.test(file) || file.includes('/node_modules/@types/') || file.includes('/node_modules/undici-types/');
  }

  /** The structure with nothing named: what identifies a type. */
  full(t: ts.Type): string {
    return this.memo(this.fullMemo, t, (x) => this.full(x));
  }

  /** The type as text: its registered name, else its structure with the named parts by name. */
  print(t: ts.Type): string {
    return this.names.get(this.full(t)) ?? this.body(t);
  }

  /** The structure, its parts by name where they have one (the body of a named type's alias). */
  body(t: ts.Type): string {
    return this.memo(this.namedMemo, t, (x) => this.print(x));
  }

  private memo(memo: Map<ts.Type, string>, t: ts.Type, rec: (x: ts.Type) => string): string {
    const known = memo.get(t);
    if (known !== undefined) return known;
    memo.set(t, 'unknown'); // a cycle (none is expected in the contract) prints as unknown
    const text = this.structure(t, rec);
    memo.set(t, text);
    return text;
  }

  private structure(t: ts.Type, rec: (x: ts.Type) => string): string {
    const c = this.checker;
    const f = t.flags;
    if (f & ts.TypeFlags.Any) return 'any';
    if (f & ts.TypeFlags.Unknown) return 'unknown';
    if (f & ts.TypeFlags.Never) return 'never';
    if (f & ts.TypeFlags.Undefined) return 'undefined';
    if (f & ts.TypeFlags.Null) return 'null';
    if (f & ts.TypeFlags.Void) return 'void';
    if (f & (ts.TypeFlags.String | ts.TypeFlags.Number | ts.TypeFlags.Boolean | ts.TypeFlags.BigInt | ts.TypeFlags.ESSymbol)) return c.typeToString(t);
    if (f & (ts.TypeFlags.StringLiteral | ts.TypeFlags.NumberLiteral | ts.TypeFlags.BooleanLiteral | ts.TypeFlags.BigIntLiteral | ts.TypeFlags.TemplateLiteral))
      return c.typeToString(t);
    if (t.isUnion()) {
      // `true | false` is boolean.
      const parts = t.types.map(rec);
      const both = parts.includes('true') && parts.includes('false');
      const rest = parts.filter((p) => !(both && (p === 'true' || p === 'false')));
      return [...new Set([...(both ? ['boolean'] : []), ...rest])].map((p) => (p.includes('=>') ? `(${p})` : p)).join(' | ');
    }
    if (t.isIntersection()) return t.types.map((x) => this.wrap(rec(x))).join(' & ');
    if (c.isArrayType(t)) return `${this.wrap(rec(c.getTypeArguments(t as ts.TypeReference)[0]))}[]`;
    if (c.isTupleType(t))
      return `[${c
        .getTypeArguments(t as ts.TypeReference)
        .map(rec)
        .join(', ')}]`;
    if (this.isExternal(t)) return c.typeToString(t, undefined, ts.TypeFormatFlags.NoTruncation).replace(/\bimport\("[^"]+"\)\./g, '');
    // A Zod schema inside a value (a helper's result) is not described further.
    if (f & ts.TypeFlags.Object && t.getProperty('_def') && t.getProperty('safeParse')) return 'Schema<unknown>';
    if (f & ts.TypeFlags.Object) {
      const signatures = c.getSignaturesOfType(t, ts.SignatureKind.Call);
      if (signatures.length) return signatures.map((s) => this.signature(s, rec)).join(' & ');
      const members: string[] = [];
      for (const p of c.getPropertiesOfType(t)) {
        const decl = p.valueDeclaration ?? p.declarations?.[0];
        const type = decl ? c.getTypeOfSymbolAtLocation(p, decl) : c.getTypeOfSymbol(p);
        const optional = (p.flags & ts.SymbolFlags.Optional) !== 0;
        const key = /^[A-Za-z_$][\w$]*$/.test(p.name) ? p.name : JSON.stringify(p.name);
        const readonly = decl && ts.getCombinedModifierFlags(decl as ts.Declaration) & ts.ModifierFlags.Readonly ? 'readonly ' : '';
        members.push(`${readonly}${key}${optional ? '?' : ''}: ${rec(type)}`);
      }
      for (const info of c.getIndexInfosOfType(t)) members.push(`[key: ${c.typeToString(info.keyType)}]: ${rec(info.type)}`);
      return members.length ? `{ ${members.join('; ')} }` : '{}';
    }
    return c.typeToString(t, undefined, ts.TypeFormatFlags.NoTruncation);
  }

  private wrap(s: string): string {
    return /[|&]|=>/.test(s) && !/^\{.*\}$/.test(s) ? `(${s})` : s;
  }

  private signature(s: ts.Signature, rec: (x: ts.Type) => string): string {
    const c = this.checker;
    const params = s.getParameters().map((p) => {
      const decl = p.valueDeclaration as ts.ParameterDeclaration | undefined;
      const optional = decl ? c.isOptionalParameter(decl) : false;
      const type = decl ? c.getTypeOfSymbolAtLocation(p, decl) : c.getTypeOfSymbol(p);
      return `${p.name}${optional ? '?' : ''}: ${rec(optional ? c.getNonNullableType(type) : type)}`;
    });
    return `(${params.join(', ')}) => ${rec(s.getReturnType())}`;
  }
}

/** The probe: a module that names, for the checker, every type the declarations describe. */
function probe(root: string, routes: { group: string; name: string }[]): string {
  return [
    "import type { initClient, ApiFetcher } from '@ts-rest/core';",
    `import type * as C from '${join(root, 'client/src/index.js')}';`,
    "type Args = { baseUrl: string; baseHeaders: { 'tenant-id': string }; throwOnUnknownStatus: true; api?: ApiFetcher };",
    'type Ts = ReturnType<typeof initClient<typeof C.contract, Args>>;',
    ...routes.flatMap((r, i) => [
      `export type Args_${i} = Parameters<Ts['${r.group}']['${r.name}']>[0];`,
      `export type Result_${i} = Awaited<ReturnType<Ts['${r.group}']['${r.name}']>>;`,
      `export type Optional_${i} = undefined extends Parameters<Ts['${r.group}']['${r.name}']>[0] ? true : false;`,
    ]),
  ].join('\n');
}

/** The declarations of client/src/index.ts for the package, as one self-contained file. */
export function clientDeclarations(root: string): string {
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
  // Which calls there are: the contract's api (the event stream aside, served by `events()`) and ops.
  const routes = (['api', 'ops'] as const).flatMap((group) =>
    Object.keys(contract[group])
      .filter((name) => !(group === 'api' && name === 'streamEvents'))
      .map((name) => ({ group, name })),
  );
  const dir = mkdtempSync(join(root, 'client/src/.declarations-'));
  const file = join(dir, 'probe.ts');
  try {
    writeFileSync(file, probe(root, routes));
    const program = ts.createProgram([file, join(root, 'client/src/index.ts')], config.options);
    const c = program.getTypeChecker();
    const printer = new Printer(c);
    const client = c.getSymbolAtLocation(program.getSourceFile(join(root, 'client/src/index.ts'))!)!;
    const exports = c.getExportsOfModule(client).map((s) => (s.flags & ts.SymbolFlags.Alias ? c.getAliasedSymbol(s) : s));
    // The contract's own type (ts-rest's router) is left out: @switchboard/contract has it.
    const typeNamed = exports.filter(
      (s) => s.flags & (ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Interface) && !['SwitchboardClient', 'Contract'].includes(s.name),
    );
    const declared = typeNamed.map((s) => ({ name: s.name, type: c.getDeclaredTypeOfSymbol(s) }));
    const schemaTyped = declared.filter((d) => d.type.getProperty('_def') && d.type.getProperty('safeParse'));
    if (schemaTyped.length) throw new Error(`exported types that are Zod schemas: ${schemaTyped.map((d) => d.name).join(', ')}`);
    // Each structure is named once (the first name in the client's export order); a type that is
    // another's under a second name is an alias of it.
    for (const d of declared) if (!printer.names.has(printer.full(d.type))) printer.names.set(printer.full(d.type), d.name);
    const aliases = declared.map((d) => {
      const named = printer.names.get(printer.full(d.type))!;
      return `export type ${d.name} = ${named === d.name ? printer.body(d.type) : named};`;
    });
    // The calls.
    const probeSym = c.getSymbolAtLocation(program.getSourceFile(file)!)!;
    const probed = new Map(c.getExportsOfModule(probeSym).map((s) => [s.name, c.getDeclaredTypeOfSymbol(s)]));
    // The options every call takes, named once: fetch's own (RequestInit's, which the platform
    // declares) and the client options a call may override.
    const callArgs = c.getNonNullableType(probed.get('Args_0')!);
    const optionOf = (name: string) => c.getNonNullableType(c.getTypeOfSymbol(callArgs.getProperty(name)!));
    printer.names.set(printer.full(optionOf('fetchOptions')), 'FetchOptions');
    printer.names.set(printer.full(optionOf('overrideClientOptions')), 'OverrideClientOptions');
    const shared = [
      "/** fetch's own options for one call (its method, headers and body are the call's). */",
      "export type FetchOptions = Omit<RequestInit, 'method' | 'headers' | 'body'>;",
      '/** Client options one call may override. */',
      `export type OverrideClientOptions = ${printer.body(optionOf('overrideClientOptions'))};`,
    ];
    const methods = (group: string) =>
      routes
        .map((r, i) => ({ r, i }))
        .filter(({ r }) => r.group === group)
        .map(({ r, i }) => {
          const optional = c.typeToString(probed.get(`Optional_${i}`)!) === 'true';
          const args = printer.print(c.getNonNullableType(probed.get(`Args_${i}`)!));
          return `  ${r.name}(args${optional ? '?' : ''}: ${args}): Promise<${printer.print(probed.get(`Result_${i}`)!)}>;`;
        });
    // Zod schemas (values of the contract) keep their runtime, typed by their own names where they have one.
    const schemaValues = exports.filter((s) => s.flags & ts.SymbolFlags.Variable && !['contract', 'RESOURCES'].includes(s.name) && /^[A-Z]/.test(s.name));
    const typeNames = new Set(typeNamed.map((s) => s.name));
    const values = schemaValues
      .filter((s) => {
        const t = c.getTypeOfSymbol(s);
        return !!t.getProperty('_def') && !!t.getProperty('parse');
      })
      .map((s) => `export declare const ${s.name}: Schema<${typeNames.has(s.name) ? s.name : 'unknown'}>;`);
    // Other values (the examples, the routes' scopes): data, described; helpers that make schemas are left out.
    const others = schemaValues.filter((s) => !values.some((v) => v.includes(` ${s.name}:`)) && c.getTypeOfSymbol(s).getCallSignatures().length === 0);
    const plain = others.map((s) => `export declare const ${s.name}: ${printer.print(c.getTypeOfSymbol(s))};`);
    // The client's two streaming methods, as createSwitchboardClient's result has them.
    const made = c
      .getTypeOfSymbol(exports.find((s) => s.name === 'createSwitchboardClient')!)
      .getCallSignatures()[0]
      .getReturnType();
    const method = (name: string) => printer.print(c.getTypeOfSymbol(made.getProperty(name)!));
    const eventsSig = method('events');
    const streamSig = method('converseStream');
    return [
      '// Generated by scripts/client-declarations.ts (npm run build:client) from the client and the contract: plain types.',
      '',
      ...aliases,
      ...shared,
      '',
      '/** The JSON calls of the API, as `sb.api.<operation>(args)`: each answers `{ status, body, headers }` for every documented status. */',
      'export interface SwitchboardApi {',
      ...methods('api'),
      '}',
      '',
      '/** The operations endpoints (health, readiness, metrics), as `sb.ops.<operation>(args)`. */',
      'export interface SwitchboardOps {',
      ...methods('ops'),
      '}',
      '',
      'export interface SwitchboardClient {',
      '  api: SwitchboardApi;',
      '  ops: SwitchboardOps;',
      `  events: ${eventsSig};`,
      `  converseStream: ${streamSig};`,
      '}',
      '',
      'export declare function createSwitchboardClient(opts: SwitchboardClientOptions): SwitchboardClient;',
      '',
      "/** A refused event stream or streamed call: the server's problem details. */",
      'export declare class SwitchboardError extends Error {',
      '  readonly status: number;',
      '  readonly problem: Partial<Problem>;',
      '  constructor(status: number, problem: Partial<Problem>);',
      '}',
      '',
      // Declared without importing Zod or ts-rest, whose own declarations a consumer would
      // otherwise load and (with skipLibCheck off) check: most of what is left of its cost.
      '/** A Zod schema of the contract, as what it checks: `parse` answers the value or throws, `safeParse` says which. */',
      'export interface Schema<T> {',
      '  parse(data: unknown): T;',
      '  safeParse(data: unknown): { success: true; data: T } | { success: false; error: Error };',
      '}',
      '',
      "/** The contract's routes, by group (api, ops, widget); the workspace package @switchboard/contract has their full type. */",
      'export declare const contract: { readonly [group: string]: { readonly [route: string]: unknown } };',
      "/** The contract's resources by name: each one's routes, OpenAPI tag and examples; @switchboard/contract has their full type. */",
      'export declare const RESOURCES: { readonly [name: string]: { readonly tag: string; readonly description: string; readonly routes: { readonly [route: string]: unknown } } };',
      ...values,
      ...plain,
      '',
    ].join('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
