// ESLint (typescript-eslint) over the TypeScript sources; run by `npm test` (npm run lint).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules', 'build', 'data', '**/*.mjs', 'eslint.config.js'] },
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
  {
    // Tests and benchmarks read loosely typed HTTP bodies.
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
