// Builds the console into console/dist, served by the server at /console (server/src/http/console.ts).
// `npm run dev -w console` serves it with hot reload, sending API calls to a server on port 3000.
import { defineConfig } from 'vite';

const api = process.env.SWITCHBOARD_URL ?? 'http://127.0.0.1:3000';

export default defineConfig({
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 800 },
  server: { proxy: { '/api': api, '/healthz': api } },
});
