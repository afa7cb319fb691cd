// Builds the test doubles into single executable files named like the upstream binaries:
//   node test/doubles/build.mjs --out DIR --version v1.36.0 --node /path/to/node
// Each file is one esbuild bundle (yaml and the field tables inside) with a `#!<node>` line, so it
// runs wherever that Node binary exists (the e2e environments install the pinned Node 24 there).
// The version is stamped in: `kubelet --version` prints "Kubernetes v1.36.0", and the doubles
// report it to the API (nodeInfo.kubeletVersion, /version) as the real binaries do.
// `fault` builds a deliberately broken release for the rollback test (see strict.mjs FAULT).
import { build } from "esbuild";
import { chmodSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
export const DOUBLES = {
  "kube-apiserver": "kube-apiserver-double.mjs",
  "kube-controller-manager": "kube-controller-manager-double.mjs",
  "kube-scheduler": "kube-scheduler-double.mjs",
  "kube-proxy": "kube-proxy-double.mjs",
  kubelet: "kubelet-double.mjs",
};

export async function buildDoubles({ out, version, node, only, fault = "" }) {
  mkdirSync(out, { recursive: true });
  const names = only ?? Object.keys(DOUBLES);
  await Promise.all(
    names.map(async (name) => {
      const outfile = join(out, name);
      await build({
        entryPoints: [join(here, DOUBLES[name])],
        bundle: true,
        platform: "node",
        target: "node24",
        format: "esm",
        outfile,
        banner: {
          js: `#!${node}\n// ${name}: rootless-k8s e2e TEST DOUBLE (see test/doubles/${DOUBLES[name]})\nimport { createRequire as __rk8sRequire } from "node:module"; const require = __rk8sRequire(import.meta.url);`,
        },
        define: { __DOUBLE_K8S_VERSION__: JSON.stringify(version), __DOUBLE_FAULT__: JSON.stringify(fault) },
        logLevel: "warning",
        legalComments: "none",
      });
      chmodSync(outfile, 0o755);
    }),
  );
  return names.map((n) => join(out, n));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { out: { type: "string" }, version: { type: "string" }, node: { type: "string" } } });
  if (!values.out || !values.version || !values.node) {
    console.error("usage: build.mjs --out DIR --version vX.Y.Z --node /abs/path/to/node");
    process.exit(2);
  }
  for (const f of await buildDoubles({ out: values.out, version: values.version, node: values.node })) console.log(f);
}
