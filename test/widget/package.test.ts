// @switchboard/widget as a bundling app uses it: `import { mount } from '@switchboard/widget'`
// resolves through the workspace and bundles to one ES module with the widget in it.
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

describe('@switchboard/widget', () => {
  it('bundles into an app that imports mount from the package', async () => {
    const out = await build({
      stdin: {
        contents:
          "import { mount } from '@switchboard/widget';\nexport const open = () => mount({ server: 'https://sb.example.com', agent: 'acme-support', key: 'pk_0' });\n",
        resolveDir: process.cwd(),
        loader: 'ts',
      },
      bundle: true,
      format: 'esm',
      write: false,
      logLevel: 'silent',
    });
    const text = out.outputFiles[0].text;
    expect(text).toContain('attachShadow');
    expect(text).toContain('/widget/v1/agents/');
    expect(text).toMatch(/export\s*\{[^}]*open/);
  });
});
