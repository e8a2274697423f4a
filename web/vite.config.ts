// The dashboard app, built by `npm run build:web` (npm install runs it) into web/dist, which the server serves.
import { defineConfig } from 'vite';

export default defineConfig({
  // Relative asset URLs: the server may mount the app under any path.
  base: './',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, reportCompressedSize: true },
});
