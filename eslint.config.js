// ESLint (typescript-eslint) over the TypeScript sources; run by `npm test` (npm run lint).
// The sources are held to strict-type-checked; tests and benchmarks, which read loosely typed
// HTTP bodies and rows, to recommended.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const SOURCES = ['server/src/**/*.ts', 'contract/src/**/*.ts', 'client/src/**/*.ts', 'console/src/**/*.{ts,tsx}'];

export default tseslint.config(
  { ignores: ['node_modules', 'build', 'data', '**/dist', '**/*.mjs', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // TypeScript's noUnusedLocals/noUnusedParameters already report these, with `_` for the deliberate ones.
      '@typescript-eslint/no-unused-vars': 'off',
      // The engine's steps are generators by type, whether or not a given step yields.
      'require-yield': 'off',
    },
  },
  ...tseslint.configs.strictTypeChecked.map((c) => ({ ...c, files: SOURCES })),
  {
    files: SOURCES,
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': 'off',
      // Numbers, booleans and null read plainly in messages and SQL fragments.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true, allowNullish: true }],
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // Knex's query builders are thenables: its `where((w) => …)` callbacks look like promise-returning callbacks.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      // A `!` marks an invariant the surrounding code establishes (a key just set, a row just written).
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // Tests and benchmarks read loosely typed HTTP bodies.
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
