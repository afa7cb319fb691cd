// Bundle cli/bin.ts into one minified CommonJS file (dist/cli.cjs) for the SEA binary and the tests.
// RK8S_VERSION overrides the version stamped into the bundle (used to build a second release in tests).
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const version = process.env.RK8S_VERSION || pkg.version;
const outfile = process.argv[2] || join(root, "dist", "cli.cjs");

await build({
  entryPoints: [join(root, "cli", "bin.ts")],
  bundle: true,
  platform: "node",
  target: "node24",
  format: "cjs",
  minify: true,
  legalComments: "none",
  outfile,
  define: { __RK8S_VERSION__: JSON.stringify(version) },
  logLevel: "warning",
});
