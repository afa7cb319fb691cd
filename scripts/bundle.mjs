// Bundle cli/bin.ts into one minified CommonJS file (dist/cli.cjs) for the SEA binary and the tests.
//   usage: node scripts/bundle.mjs [OUTFILE] [--metafile FILE]
// RK8S_VERSION overrides the version stamped into the bundle (used to build a second release in tests).
// The release public key compiled in (what self-upgrade verifies SHA256SUMS.sig with) is derived from
// the private key at ROOTLESS_K8S_SIGNING_KEY, or given as RK8S_RELEASE_PUBKEY (base64 SPKI DER);
// without either the build has none and its self-upgrade refuses.
// --metafile writes esbuild's import graph (the tests check that start-up imports nothing heavy).
// Dependencies are imported lazily (`await import()` inside the command that needs them): esbuild
// keeps each such module in a wrapper that runs only when first imported, so `--version` evaluates
// only the few small modules cli/main.ts imports statically.
import { build } from "esbuild";
import { createPrivateKey, createPublicKey } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const version = process.env.RK8S_VERSION || pkg.version;
const pubkey = releasePublicKey();
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
  define: { __RK8S_VERSION__: JSON.stringify(version), __RK8S_RELEASE_PUBKEY__: JSON.stringify(pubkey) },
  logLevel: "warning",
});
if (values.metafile) writeFileSync(values.metafile, JSON.stringify(result.metafile));

/** base64 SPKI DER of the ed25519 release key, or "" when this build is not made for release. */
function releasePublicKey() {
  if (process.env.RK8S_RELEASE_PUBKEY) {
    const key = createPublicKey({ key: Buffer.from(process.env.RK8S_RELEASE_PUBKEY, "base64"), format: "der", type: "spki" });
    if (key.asymmetricKeyType !== "ed25519") throw new Error("RK8S_RELEASE_PUBKEY is not an ed25519 public key");
    return key.export({ format: "der", type: "spki" }).toString("base64");
  }
  const file = process.env.ROOTLESS_K8S_SIGNING_KEY;
  if (!file) return "";
  const key = createPrivateKey(readFileSync(file));
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`${file} is not an ed25519 private key`);
  return createPublicKey(key).export({ format: "der", type: "spki" }).toString("base64");
}
