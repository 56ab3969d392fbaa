// Builds the plugin: main.ts (with the shared view components from ../web/src) into main.js, and
// styles.css from the agent view's stylesheet, scoped to the plugin's pane, plus src/plugin.css.
// `node build.mjs [outdir]` writes into outdir (default: this folder, where Obsidian looks).
import { build } from "esbuild";
import { builtinModules } from "node:module";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { scopeCss } from "./scope-css.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? here);
mkdirSync(out, { recursive: true });

// The components in ../web/src would otherwise find ../web/node_modules/preact when it exists:
// two copies of preact break hooks, so every import of preact resolves from this folder.
const onePreact = {
  name: "one-preact",
  setup(b) {
    b.onResolve({ filter: /^preact(\/.*)?$/ }, (args) =>
      args.resolveDir === here ? undefined : b.resolve(args.path, { kind: args.kind, resolveDir: here }),
    );
  },
};

await build({
  entryPoints: [join(here, "main.ts")],
  outfile: join(out, "main.js"),
  bundle: true,
  format: "cjs",
  platform: "browser",
  target: ["es2020"],
  jsx: "automatic",
  jsxImportSource: "preact",
  external: ["obsidian", "electron", "@codemirror/*", "@lezer/*", ...builtinModules],
  plugins: [onePreact],
  minify: true,
  legalComments: "none",
  charset: "utf8",
  sourcemap: false,
  logLevel: "warning",
});

const web = readFileSync(join(here, "..", "web", "src", "styles.css"), "utf8");
const own = readFileSync(join(here, "src", "plugin.css"), "utf8");
writeFileSync(
  join(out, "styles.css"),
  `/* Built by build.mjs from web/src/styles.css (scoped to .vaultpilot-view) and src/plugin.css. */\n${scopeCss(web, ".vaultpilot-view")}\n${own}`,
);
