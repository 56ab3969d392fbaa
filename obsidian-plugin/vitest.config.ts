import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// "obsidian" is the app itself at run time; the tests use a small stand-in (test/obsidian.ts).
// preact resolves from this folder only, so the components in ../web/src share the plugin's copy.
// TypeScript first: "../main" is main.ts, not the main.js a build leaves beside it.
export default defineConfig({
  resolve: {
    extensions: [".ts", ".tsx", ".mjs", ".js", ".json"],
    alias: { obsidian: fileURLToPath(new URL("./test/obsidian.ts", import.meta.url)) },
    dedupe: ["preact"],
  },
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  test: {
    environment: "happy-dom",
    include: ["test/**/*.test.ts"],
    testTimeout: 10_000,
    server: { deps: { inline: [/preact/] } },
  },
});
