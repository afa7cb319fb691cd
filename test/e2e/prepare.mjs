// Lays out what an e2e environment needs, below one folder that is copied as is into the VM guest:
//   OPT/node                 the pinned Node 24 (the e2e tools' and the mirror server's interpreter)
//   OPT/bin/rootless-k8s     the binary under test (the SEA build from `make build`)
//   OPT/lib/e2e-tool.mjs     the e2e probes (test/e2e/lib/e2e-tool.mjs, bundled)
//   OPT/lib/busybox          a static busybox for the offline OCI images
//   OPT/lib/crio-image-load  copies an OCI archive into CRI-O's store (test/e2e/tools; crio scenario)
//   OPT/mirror/              the loopback mirror (files + manifests; test/e2e/mirror/build-mirror.mjs)
//   OPT/lib/serve-mirror.mjs the mirror server
//   OPT/images/              the images the pods run, OCI archives for `rootless-k8s image load`
//                            (test/e2e/images/build-images.mjs), listed in images.json
//   OPT/conformance/         with --conformance: upstream's suite, its images and lists
//                            (test/conformance/prepare.mjs)
//
//   node test/e2e/prepare.mjs --cache /var/tmp/rk8s-e2e --opt /opt/rk8s-e2e --cli dist/rootless-k8s-linux-amd64 [--conformance]
import { build } from "esbuild";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { buildImages, containerdSandboxImage } from "./images/build-images.mjs";
import { prepareConformance } from "../conformance/prepare.mjs";
import { buildMirror } from "./mirror/build-mirror.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: { cache: { type: "string" }, opt: { type: "string" }, cli: { type: "string" }, conformance: { type: "boolean" } },
});
if (!values.cache || !values.opt || !values.cli) {
  console.error("usage: prepare.mjs --cache DIR --opt DIR --cli PATH_TO_ROOTLESS_K8S_BINARY");
  process.exit(2);
}
const opt = values.opt;
for (const d of ["bin", "lib"]) mkdirSync(join(opt, d), { recursive: true, mode: 0o755 });

/**
 * Copies when missing or different in size/mtime (the 120 MB binaries are not copied every run),
 * through a temporary file and a rename: a binary still running from an earlier run (ETXTBSY on
 * an in-place copy) is replaced, not written into.
 */
function install(src, dest) {
  const s = statSync(src);
  const d = existsSync(dest) ? statSync(dest) : null;
  if (!d || d.size !== s.size || d.mtimeMs < s.mtimeMs) {
    const tmp = `${dest}.tmp-${process.pid}`;
    copyFileSync(src, tmp);
    chmodSync(tmp, 0o755);
    renameSync(tmp, dest);
  }
  return dest;
}

install(process.execPath, join(opt, "node"));
if (!existsSync(values.cli)) {
  console.error(`no rootless-k8s binary at ${values.cli} (run \`make build\` first)`);
  process.exit(1);
}
install(values.cli, join(opt, "bin", "rootless-k8s"));
/** One ESM file for the pinned Node, with its imports inside (OPT is copied into the VM guest as is). */
const bundle = (entry, outfile) =>
  build({ entryPoints: [entry], bundle: true, platform: "node", target: "node24", format: "esm", outfile, logLevel: "warning" });
await bundle(join(here, "lib", "e2e-tool.mjs"), join(opt, "lib", "e2e-tool.mjs"));
copyFileSync(join(here, "mirror", "serve-mirror.mjs"), join(opt, "lib", "serve-mirror.mjs"));
const r = await buildMirror({ cache: values.cache, out: join(opt, "mirror"), node: join(opt, "node") });
install(r.busybox, join(opt, "lib", "busybox"));
// The crio scenario's image loader (image load refuses CRI-O): test/e2e/tools/crio-image-load.
const loader = r.summary.builds.find((x) => x.id === "crio-image-load")?.binaries[0]?.path;
if (!loader) throw new Error("no crio-image-load build (test/e2e/build/components.json)");
install(loader, join(opt, "lib", "crio-image-load"));
const built = (id) => {
  const b = r.summary.builds.find((x) => x.id === id);
  if (!b) throw new Error(`no ${id} build (test/e2e/build/components.json)`);
  return b;
};
const agn = built("agnhost");
const ctd = built("containerd");
const dns = built("coredns");
const lpp = built("local-path-provisioner");
const ms = built("metrics-server");
const images = buildImages({
  out: join(opt, "images"),
  kubernetes: { module: agn.module, version: agn.version },
  agnhost: agn.binaries.find((x) => x.name === "agnhost").path,
  busybox: r.busybox,
  debs: join(values.cache, "debs-images"),
  coredns: { path: dns.binaries.find((x) => x.name === "coredns").path, version: dns.version },
  localPath: { path: lpp.binaries.find((x) => x.name === "local-path-provisioner").path, version: lpp.version },
  metricsServer: { path: ms.binaries.find((x) => x.name === "metrics-server").path, version: ms.version },
  sandboxImages: [containerdSandboxImage(ctd.module, ctd.version)],
});
console.log(`images: ${images.map((i) => i.names.join(" = ")).join("; ")}`);
// The add-on images the node runs, pinned by the digests of the archives built here (as the
// built-in manifest pins upstream's), in every manifest the mirror serves.
const ADDON_ROLES = {
  coredns: "coredns",
  "local-path-provisioner": "local-path-provisioner",
  "local-path-helper": "busybox",
  "metrics-server": "metrics-server",
};
const addonImages = Object.entries(ADDON_ROLES).map(([id, role]) => {
  const i = images.find((x) => x.role === role);
  if (!i) throw new Error(`no ${role} image for the ${id} add-on`);
  return { id, name: i.name, digest: i.digest, source: `e2e: the archive built here from ${i.source} (test/e2e/images)` };
});
const manifestDir = join(opt, "mirror", "manifests");
for (const f of readdirSync(manifestDir).filter((x) => x.endsWith(".json"))) {
  const m = JSON.parse(readFileSync(join(manifestDir, f), "utf8"));
  m.images = addonImages;
  writeFileSync(join(manifestDir, f), `${JSON.stringify(m, null, 2)}\n`);
}
if (values.conformance) {
  prepareConformance({
    opt,
    buildCache: process.env.E2E_BUILD_CACHE ?? "/var/tmp/rk8s-build",
    cache: values.cache,
    busybox: r.busybox,
    agnhost: agn.binaries.find((x) => x.name === "agnhost").path,
  });
  for (const f of ["summarize.mjs", "shard.mjs"]) await bundle(join(here, "..", "conformance", f), join(opt, "conformance", f));
}
console.log(`prepared ${opt}: ${r.manifests.length} version sets`);
