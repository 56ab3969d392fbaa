// Builds the agent view into ../src/vaultpilot/web/static (or the folder given as the first
// argument). The output is deterministic: same sources and lockfile, same bytes, which is what
// tests/web/test_bundle.py checks against the committed bundle.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? join(here, "..", "src", "vaultpilot", "web", "static"));
mkdirSync(out, { recursive: true });

await build({
  entryPoints: { app: join(here, "src", "main.tsx") },
  outdir: out,
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  charset: "utf8",
  sourcemap: false,
  logLevel: "warning",
  loader: { ".css": "css" },
});
copyFileSync(join(here, "index.html"), join(out, "index.html"));
