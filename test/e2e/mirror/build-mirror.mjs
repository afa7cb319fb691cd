// Builds the e2e loopback mirror: real Debian 12 binaries (apt-get download + dpkg -x, nothing is
// installed on the host) packed in upstream's archive layouts at upstream's URL paths, plus the
// Kubernetes test doubles (test/doubles) packed as upstream's kubernetes-server tarball, and one
// manifest per version set (schema of cli/fetch, docs/manifest.md) whose checksums are those of
// the files served. Archives are deterministic, so checksums stay the same across runs.
//
//   node test/e2e/mirror/build-mirror.mjs --cache /var/tmp/rk8s-e2e --out DIR --node /opt/rk8s-e2e/node
//
// Version sets written to DIR/manifests/:
//   k8s-1.36.0.json   the install set (doubles v1.36.0)
//   k8s-1.37.0.json   the upgrade target (doubles v1.37.0)
//   k8s-1.37.1.json   a verified but broken release: its kube-apiserver exits at start (rollback test)
//   k8s-1.39.0.json   two minors ahead of 1.37: the upgrade must refuse it before downloading
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { buildDoubles } from "../../doubles/build.mjs";
import { tarGz } from "../../helpers/tar.mjs";


const DEBS = ["rootlesskit", "slirp4netns", "containerd", "runc", "containernetworking-plugins", "etcd-server", "etcd-client", "busybox-static"];
const CNI = ["bandwidth", "bridge", "firewall", "host-local", "loopback", "portmap", "ptp", "tuning"];
export const SETS = [
  { k8s: "1.36.0", fault: "" },
  { k8s: "1.37.0", fault: "" },
  { k8s: "1.37.1", fault: "apiserver-exit" },
];
const ARCH = "amd64";

const hex = (alg, b) => createHash(alg).update(b).digest("hex");
/** Debian version → upstream version: drop epoch, ~ds/+ds/+dfsg suffixes and the Debian revision. */
export function upstreamVersion(deb) {
  return deb.replace(/^\d+:/, "").replace(/-[^-]*$/, "").replace(/[~+](ds|dfsg)\d*$/, "");
}

function ensureDebs(cache) {
  const dir = join(cache, "debs");
  mkdirSync(dir, { recursive: true });
  const have = readdirSync(dir);
  const missing = DEBS.filter((p) => !have.some((f) => f.startsWith(`${p}_`) && f.endsWith(".deb")));
  if (missing.length) {
    const get = () => execFileSync("apt-get", ["download", ...missing], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
    try {
      get();
    } catch {
      execFileSync("apt-get", ["update"], { stdio: "ignore" });
      get();
    }
  }
  const out = {};
  for (const p of DEBS) {
    const deb = readdirSync(dir).find((f) => f.startsWith(`${p}_`) && f.endsWith(".deb"));
    const root = join(cache, "root", p);
    if (!existsSync(join(root, ".done"))) {
      rmSync(root, { recursive: true, force: true });
      mkdirSync(root, { recursive: true });
      execFileSync("dpkg-deb", ["-x", join(dir, deb), root]);
      writeFileSync(join(root, ".done"), "");
    }
    const version = execFileSync("dpkg-deb", ["-f", join(dir, deb), "Version"], { encoding: "utf8" }).trim();
    out[p] = { root, version, upstream: upstreamVersion(version), deb };
  }
  return out;
}

/** A real kubectl for the server tarball: the newest static one on this machine, else Debian's. */
function findKubectl(cache) {
  const sdk = "/usr/lib/google-cloud-sdk/bin";
  if (existsSync(sdk)) {
    const v = readdirSync(sdk).filter((f) => /^kubectl\.1\.\d+$/.test(f)).sort((a, b) => Number(a.split(".")[2]) - Number(b.split(".")[2]));
    if (v.length) return join(sdk, v.at(-1));
  }
  const root = join(cache, "root", "kubernetes-client");
  if (!existsSync(join(root, "usr/bin/kubectl"))) {
    const dir = join(cache, "debs");
    execFileSync("apt-get", ["download", "kubernetes-client"], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
    const deb = readdirSync(dir).find((f) => f.startsWith("kubernetes-client_"));
    mkdirSync(root, { recursive: true });
    execFileSync("dpkg-deb", ["-x", join(dir, deb), root]);
  }
  return join(root, "usr/bin/kubectl");
}

class Mirror {
  constructor(out) {
    this.out = out;
  }
  /** Writes `data` at the upstream URL's path; returns the file name. */
  put(url, data) {
    const p = join(this.out, "files", new URL(url).pathname);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, data);
    return p;
  }
}

function artifact({ id, component, version, url, format, binaries, data, when, sideFiles, source, alg = "sha256", archToken = ARCH }) {
  return {
    json: {
      id,
      component,
      version,
      url,
      arch: { amd64: archToken },
      format,
      binaries,
      checksums: { amd64: { algorithm: alg, value: hex(alg, data), source, size: data.length } },
      ...(sideFiles ? { sideFiles } : {}),
      ...(when ? { when } : {}),
    },
  };
}

export async function buildMirror({ cache, out, node }) {
  const debs = ensureDebs(cache);
  const m = new Mirror(out);
  rmSync(join(out, "files"), { recursive: true, force: true });
  mkdirSync(join(out, "manifests"), { recursive: true });
  const bin = (p, rel) => readFileSync(join(debs[p].root, rel));
  const src = (p) => `e2e mirror: sha256 of the served file, packed from Debian 12 ${p} ${debs[p].version} (${debs[p].deb})`;
  const exe = (path, content) => ({ path, content, mode: 0o755 });
  const common = [];

  // etcd: etcd-v{version}-linux-{arch}/etcd (+ etcdctl), SHA256SUMS next to it.
  {
    const v = debs["etcd-server"].upstream;
    const top = `etcd-v${v}-linux-${ARCH}`;
    const data = tarGz([{ path: top, type: "dir" }, exe(`${top}/etcd`, bin("etcd-server", "usr/bin/etcd")), exe(`${top}/etcdctl`, bin("etcd-client", "usr/bin/etcdctl"))]);
    const url = `https://github.com/etcd-io/etcd/releases/download/v${v}/etcd-v${v}-linux-${ARCH}.tar.gz`;
    m.put(url, data);
    m.put(`https://github.com/etcd-io/etcd/releases/download/v${v}/SHA256SUMS`, `${hex("sha256", data)}  etcd-v${v}-linux-${ARCH}.tar.gz\n`);
    common.push(
      artifact({
        id: "etcd", component: "etcd", version: v, format: "tar.gz", data, source: src("etcd-server"),
        url: "https://github.com/etcd-io/etcd/releases/download/v{version}/etcd-v{version}-linux-{arch}.tar.gz",
        binaries: [{ name: "etcd", path: "etcd-v{version}-linux-{arch}/etcd" }, { name: "etcdctl", path: "etcd-v{version}-linux-{arch}/etcdctl" }],
        sideFiles: [{ url: "https://github.com/etcd-io/etcd/releases/download/v{version}/SHA256SUMS", algorithm: "sha256" }],
      }),
    );
  }
  // containerd: the static tarball's bin/ layout, .sha256sum side file.
  {
    const v = debs.containerd.upstream;
    const data = tarGz([{ path: "bin", type: "dir" }, ...["containerd", "containerd-shim-runc-v2", "ctr"].map((b) => exe(`bin/${b}`, bin("containerd", `usr/bin/${b}`)))]);
    const file = `containerd-static-${v}-linux-${ARCH}.tar.gz`;
    m.put(`https://github.com/containerd/containerd/releases/download/v${v}/${file}`, data);
    m.put(`https://github.com/containerd/containerd/releases/download/v${v}/${file}.sha256sum`, `${hex("sha256", data)}  ${file}\n`);
    common.push(
      artifact({
        id: "containerd", component: "containerd", version: v, format: "tar.gz", data, source: src("containerd"), when: { runtime: ["containerd"] },
        url: "https://github.com/containerd/containerd/releases/download/v{version}/containerd-static-{version}-linux-{arch}.tar.gz",
        binaries: ["containerd", "containerd-shim-runc-v2", "ctr"].map((b) => ({ name: b, path: `bin/${b}` })),
        sideFiles: [{ url: "https://github.com/containerd/containerd/releases/download/v{version}/containerd-static-{version}-linux-{arch}.tar.gz.sha256sum", algorithm: "sha256" }],
      }),
    );
  }
  // runc: a bare binary runc.{arch}, runc.sha256sum.
  {
    const v = debs.runc.upstream;
    const data = bin("runc", "usr/sbin/runc");
    m.put(`https://github.com/opencontainers/runc/releases/download/v${v}/runc.${ARCH}`, data);
    m.put(`https://github.com/opencontainers/runc/releases/download/v${v}/runc.sha256sum`, `${hex("sha256", data)}  runc.${ARCH}\n`);
    common.push(
      artifact({
        id: "runc", component: "runc", version: v, format: "binary", data, source: src("runc"), when: { runtime: ["containerd"] },
        url: "https://github.com/opencontainers/runc/releases/download/v{version}/runc.{arch}", binaries: [{ name: "runc" }],
        sideFiles: [{ url: "https://github.com/opencontainers/runc/releases/download/v{version}/runc.sha256sum", algorithm: "sha256" }],
      }),
    );
  }
  // CNI plugins: ./<plugin> at the top of the tgz, .sha256 side file.
  {
    const v = debs["containernetworking-plugins"].upstream;
    const data = tarGz([{ path: "./", type: "dir" }, ...CNI.map((p) => exe(`./${p}`, bin("containernetworking-plugins", `usr/lib/cni/${p}`)))]);
    const file = `cni-plugins-linux-${ARCH}-v${v}.tgz`;
    m.put(`https://github.com/containernetworking/plugins/releases/download/v${v}/${file}`, data);
    m.put(`https://github.com/containernetworking/plugins/releases/download/v${v}/${file}.sha256`, `${hex("sha256", data)}  ${file}\n`);
    common.push(
      artifact({
        id: "cni-plugins", component: "cni-plugins", version: v, format: "tar.gz", data, source: src("containernetworking-plugins"),
        url: "https://github.com/containernetworking/plugins/releases/download/v{version}/cni-plugins-linux-{arch}-v{version}.tgz",
        binaries: CNI.map((p) => ({ name: p, path: `./${p}`, dir: "cni" })),
        sideFiles: [{ url: "https://github.com/containernetworking/plugins/releases/download/v{version}/cni-plugins-linux-{arch}-v{version}.tgz.sha256", algorithm: "sha256" }],
      }),
    );
  }
  // RootlessKit: rootlesskit-x86_64.tar.gz with rootlesskit and rootlessctl at the top, SHA256SUMS.
  {
    const v = debs.rootlesskit.upstream;
    const data = tarGz([exe("rootlesskit", bin("rootlesskit", "usr/bin/rootlesskit")), exe("rootlessctl", bin("rootlesskit", "usr/bin/rootlessctl"))]);
    m.put(`https://github.com/rootless-containers/rootlesskit/releases/download/v${v}/rootlesskit-x86_64.tar.gz`, data);
    const slirp = bin("slirp4netns", "usr/bin/slirp4netns");
    const sv = debs.slirp4netns.upstream;
    m.put(`https://github.com/rootless-containers/rootlesskit/releases/download/v${v}/SHA256SUMS`, `${hex("sha256", data)}  rootlesskit-x86_64.tar.gz\n`);
    m.put(`https://github.com/rootless-containers/slirp4netns/releases/download/v${sv}/slirp4netns-x86_64`, slirp);
    m.put(`https://github.com/rootless-containers/slirp4netns/releases/download/v${sv}/SHA256SUMS`, `${hex("sha256", slirp)}  slirp4netns-x86_64\nSOURCE_DATE_EPOCH=0\n`);
    common.push(
      artifact({
        id: "rootlesskit", component: "rootlesskit", version: v, format: "tar.gz", data, source: src("rootlesskit"), archToken: "x86_64",
        url: "https://github.com/rootless-containers/rootlesskit/releases/download/v{version}/rootlesskit-{arch}.tar.gz",
        binaries: [{ name: "rootlesskit", path: "rootlesskit" }, { name: "rootlessctl", path: "rootlessctl" }],
        sideFiles: [{ url: "https://github.com/rootless-containers/rootlesskit/releases/download/v{version}/SHA256SUMS", algorithm: "sha256" }],
      }),
      artifact({
        id: "slirp4netns", component: "slirp4netns", version: sv, format: "binary", data: slirp, source: src("slirp4netns"), when: { network: ["slirp4netns"] }, archToken: "x86_64",
        url: "https://github.com/rootless-containers/slirp4netns/releases/download/v{version}/slirp4netns-{arch}", binaries: [{ name: "slirp4netns" }],
        sideFiles: [{ url: "https://github.com/rootless-containers/slirp4netns/releases/download/v{version}/SHA256SUMS", algorithm: "sha256" }],
      }),
    );
  }
  // Kubernetes: the doubles (and a real kubectl) as kubernetes/server/bin/* of the server tarball,
  // pinned by sha512 like upstream's release notes, with the .sha512 side file dl.k8s.io has.
  const kubectl = readFileSync(findKubectl(cache));
  const written = [];
  for (const set of SETS) {
    const dir = join(cache, "doubles", `v${set.k8s}${set.fault ? `-${set.fault}` : ""}`);
    rmSync(dir, { recursive: true, force: true });
    await buildDoubles({ out: dir, version: `v${set.k8s}`, node, fault: set.fault });
    const names = ["kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"];
    const data = tarGz(
      [
        { path: "kubernetes", type: "dir" },
        { path: "kubernetes/server", type: "dir" },
        { path: "kubernetes/server/bin", type: "dir" },
        ...names.map((n) => exe(`kubernetes/server/bin/${n}`, readFileSync(join(dir, n)))),
        exe("kubernetes/server/bin/kubectl", kubectl),
      ],
      1,
    );
    const url = `https://dl.k8s.io/v${set.k8s}/kubernetes-server-linux-${ARCH}.tar.gz`;
    m.put(url, data);
    m.put(`${url}.sha512`, hex("sha512", data));
    const k8s = artifact({
      id: "kubernetes-server", component: "kubernetes", version: set.k8s, format: "tar.gz", data, alg: "sha512",
      source: `e2e mirror: sha512 of the served file: test doubles v${set.k8s}${set.fault ? ` (fault: ${set.fault})` : ""} (test/doubles) and a real kubectl`,
      url: "https://dl.k8s.io/v{version}/kubernetes-server-linux-{arch}.tar.gz",
      binaries: [...names, "kubectl"].map((n) => ({ name: n, path: `kubernetes/server/bin/${n}` })),
      sideFiles: [{ url: "https://dl.k8s.io/v{version}/kubernetes-server-linux-{arch}.tar.gz.sha512", algorithm: "sha512" }],
    });
    const manifest = {
      schema: 1,
      name: `rootless-k8s e2e: Kubernetes ${set.k8s} (test doubles) with Debian 12 components`,
      description: "Served by test/e2e/mirror from 127.0.0.1; every checksum is that of the served file.",
      artifacts: [k8s.json, ...common.map((a) => a.json)],
    };
    const file = join(out, "manifests", `k8s-${set.k8s}.json`);
    writeFileSync(file, JSON.stringify(manifest, null, 2) + "\n");
    written.push(file);
  }
  // Two minors ahead: never downloaded (the skew check refuses first), so its file is not served.
  const skew = JSON.parse(readFileSync(written[1], "utf8"));
  skew.name = "rootless-k8s e2e: Kubernetes 1.39.0 (not served: the skew check must refuse it)";
  skew.artifacts[0].version = "1.39.0";
  writeFileSync(join(out, "manifests", "k8s-1.39.0.json"), JSON.stringify(skew, null, 2) + "\n");
  writeFileSync(join(out, "versions.json"), JSON.stringify(Object.fromEntries(Object.entries(debs).map(([k, v]) => [k, v.version])), null, 2) + "\n");
  return { manifests: written, busybox: join(debs["busybox-static"].root, "bin/busybox") };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { cache: { type: "string" }, out: { type: "string" }, node: { type: "string" } } });
  if (!values.cache || !values.out || !values.node) {
    console.error("usage: build-mirror.mjs --cache DIR --out DIR --node /abs/path/of/node/in/the/test/environment");
    process.exit(2);
  }
  const r = await buildMirror({ cache: values.cache, out: values.out, node: values.node });
  for (const f of r.manifests) console.log(f);
}

