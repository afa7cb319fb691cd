// Bundle cli/bin.ts into one minified CommonJS file (dist/cli.cjs) for the SEA binary and the tests.
//   usage: node scripts/bundle.mjs [OUTFILE] [--metafile FILE]
// RK8S_VERSION overrides the version stamped into the bundle (used to build a second release in tests).
// --metafile writes esbuild's import graph (the tests check that start-up imports nothing heavy).
// Dependencies are imported lazily (`await import()` inside the command that needs them): esbuild
// keeps each such module in a wrapper that runs only when first imported, so `--version` evaluates
// only the few small modules cli/main.ts imports statically.
import { build } from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const version = process.env.RK8S_VERSION || pkg.version;
const { values, positionals } = parseArgs({ options: { metafile: { type: "string" } }, allowPositionals: true });
const outfile = positionals[0] || join(root, "dist", "cli.cjs");

const result = await build({
  entryPoints: [join(root, "cli", "bin.ts")],
  bundle: true,
  platform: "node",
  target: "node24",
  format: "cjs",
  minify: true,
  legalComments: "none",
  outfile,
  metafile: values.metafile !== undefined,
  define: { __RK8S_VERSION__: JSON.stringify(version) },
  logLevel: "warning",
});
if (values.metafile) writeFileSync(values.metafile, JSON.stringify(result.metafile));
