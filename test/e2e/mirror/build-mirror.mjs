// Builds the e2e loopback mirror: the upstream components built from their Go modules
// (test/e2e/build: Kubernetes, etcd, containerd, runc, CRI-O, CNI plugins, crictl, cri-dockerd, RootlessKit) and
// the few that no Go module serves taken from Debian 12 (slirp4netns, conmon) or built from a Debian
// source package (crun; busybox for the test images, test/e2e/build/debian-source.mjs), packed in upstream's archive layouts at upstream's URL paths, with one manifest per
// version set (schema of cli/fetch, docs/manifest.md) whose checksums are those of the files
// served. Archives are deterministic, so checksums stay the same across runs of the same builds.
//
//   node test/e2e/mirror/build-mirror.mjs --cache /var/tmp/rk8s-e2e --out DIR --node /opt/rk8s-e2e/node
//
// Version sets written to DIR/manifests/ (names: k8s-<Kubernetes version>.json):
//   the install set     Kubernetes 1.36.x, the previous minor of the product's built-in set
//   the upgrade target  Kubernetes 1.37.x, the minor the product installs
//   a broken release    the 1.37 binaries with a kube-apiserver that exits at start (rollback test:
//                       the one place a stand-in remains, a shell script, as issue #9 allows)
//   a skew set          two minors ahead of the install set: the upgrade must refuse it before
//                       downloading, so its files are not served
// DIR/sources.json says where every binary came from (module@version or Debian package).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { tarGz } from "../../helpers/tar.mjs";
import { buildAll } from "../build/build-components.mjs";
import { buildDebianSources } from "../build/debian-source.mjs";

const DEBS = ["slirp4netns", "conmon"];
const CNI = ["bandwidth", "bridge", "firewall", "host-local", "loopback", "portmap", "ptp", "tuning"];
const K8S = ["kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubectl"];
const ARCH = "amd64";
const BROKEN_APISERVER = Buffer.from(
  "#!/bin/sh\n# The rollback test's deliberately broken release: this kube-apiserver exits at start.\necho 'kube-apiserver: broken release (e2e rollback test): exiting' >&2\nexit 1\n",
);

const hex = (alg, b) => createHash(alg).update(b).digest("hex");
/** Debian version → upstream version: drop epoch, ~ds/+ds/+dfsg suffixes and the Debian revision. */
export function upstreamVersion(deb) {
  return deb
    .replace(/^\d+:/, "")
    .replace(/-[^-]*$/, "")
    .replace(/[~+](ds|dfsg)\d*$/, "");
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

/**
 * The built components by id (test/e2e/build), each {version (no v), binaries: {name: path}, source}.
 * Throws when a build failed: the e2e cannot run on anything else.
 */
function components(buildCache, say) {
  const s = buildAll({ cache: buildCache, say });
  if (s.failed.length) throw new Error(`component builds failed: ${s.failed.join("; ")}`);
  const byId = {};
  for (const b of s.builds) {
    byId[b.id] = {
      version: b.version.replace(/^v/, ""),
      source: `${b.module}@${b.version}`,
      bin: Object.fromEntries(b.binaries.map((x) => [x.name, x.path])),
      binaries: b.binaries,
    };
  }
  // C components built from Debian source packages (crun): version without the Debian revision.
  for (const [id, d] of Object.entries(buildDebianSources({ cache: buildCache, say }))) {
    byId[id] = { version: d.version.replace(/-[^-]+$/, ""), source: d.source, bin: d.bin, binaries: d.build.binaries };
  }
  return { byId, summary: s };
}

export async function buildMirror({
  cache,
  out,
  node,
  buildCache = process.env.E2E_BUILD_CACHE ?? "/var/tmp/rk8s-build",
  say = console.log,
}) {
  void node;
  const debs = ensureDebs(cache);
  const { byId: c, summary } = components(buildCache, say);
  const m = new Mirror(out);
  rmSync(join(out, "files"), { recursive: true, force: true });
  rmSync(join(out, "manifests"), { recursive: true, force: true });
  mkdirSync(join(out, "manifests"), { recursive: true });
  const file = (p) => readFileSync(p);
  const built = (id) =>
    `e2e mirror: sha256 of the served file, packed from ${c[id].source} built with ${summary.goVersion} (test/e2e/build)`;
  const exe = (path, content) => ({ path, content, mode: 0o755 });
  const common = [];
  const sources = {};
  const note = (id, names) => {
    for (const n of names) sources[n] = { source: c[id].source, path: c[id].bin[n], sha256: hex("sha256", file(c[id].bin[n])) };
  };

  // etcd: etcd-v{version}-linux-{arch}/etcd (+ etcdctl), SHA256SUMS next to it.
  {
    const v = c.etcd.version;
    const top = `etcd-v${v}-linux-${ARCH}`;
    const data = tarGz(
      [{ path: top, type: "dir" }, exe(`${top}/etcd`, file(c.etcd.bin.etcd)), exe(`${top}/etcdctl`, file(c.etcdctl.bin.etcdctl))],
      1,
    );
    const url = `https://github.com/etcd-io/etcd/releases/download/v${v}/etcd-v${v}-linux-${ARCH}.tar.gz`;
    m.put(url, data);
    m.put(
      `https://github.com/etcd-io/etcd/releases/download/v${v}/SHA256SUMS`,
      `${hex("sha256", data)}  etcd-v${v}-linux-${ARCH}.tar.gz\n`,
    );
    note("etcd", ["etcd"]);
    note("etcdctl", ["etcdctl"]);
    common.push(
      artifact({
        id: "etcd",
        component: "etcd",
        version: v,
        format: "tar.gz",
        data,
        source: `${built("etcd")}; etcdctl from ${c.etcdctl.source}`,
        url: "https://github.com/etcd-io/etcd/releases/download/v{version}/etcd-v{version}-linux-{arch}.tar.gz",
        binaries: [
          { name: "etcd", path: "etcd-v{version}-linux-{arch}/etcd" },
          { name: "etcdctl", path: "etcd-v{version}-linux-{arch}/etcdctl" },
        ],
        sideFiles: [{ url: "https://github.com/etcd-io/etcd/releases/download/v{version}/SHA256SUMS", algorithm: "sha256" }],
      }),
    );
  }
  // containerd: the static tarball's bin/ layout, .sha256sum side file.
  {
    const v = c.containerd.version;
    const names = ["containerd", "containerd-shim-runc-v2", "ctr"];
    const data = tarGz([{ path: "bin", type: "dir" }, ...names.map((b) => exe(`bin/${b}`, file(c.containerd.bin[b])))], 1);
    const f = `containerd-static-${v}-linux-${ARCH}.tar.gz`;
    m.put(`https://github.com/containerd/containerd/releases/download/v${v}/${f}`, data);
    m.put(`https://github.com/containerd/containerd/releases/download/v${v}/${f}.sha256sum`, `${hex("sha256", data)}  ${f}\n`);
    note("containerd", names);
    common.push(
      artifact({
        id: "containerd",
        component: "containerd",
        version: v,
        format: "tar.gz",
        data,
        source: built("containerd"),
        when: { runtime: ["containerd"] },
        url: "https://github.com/containerd/containerd/releases/download/v{version}/containerd-static-{version}-linux-{arch}.tar.gz",
        binaries: names.map((b) => ({ name: b, path: `bin/${b}` })),
        sideFiles: [
          {
            url: "https://github.com/containerd/containerd/releases/download/v{version}/containerd-static-{version}-linux-{arch}.tar.gz.sha256sum",
            algorithm: "sha256",
          },
        ],
      }),
    );
  }
  // runc: a bare binary runc.{arch}, runc.sha256sum.
  {
    const v = c.runc.version;
    const data = file(c.runc.bin.runc);
    m.put(`https://github.com/opencontainers/runc/releases/download/v${v}/runc.${ARCH}`, data);
    m.put(`https://github.com/opencontainers/runc/releases/download/v${v}/runc.sha256sum`, `${hex("sha256", data)}  runc.${ARCH}\n`);
    note("runc", ["runc"]);
    common.push(
      artifact({
        id: "runc",
        component: "runc",
        version: v,
        format: "binary",
        data,
        source: built("runc"),
        when: { runtime: ["containerd"] },
        url: "https://github.com/opencontainers/runc/releases/download/v{version}/runc.{arch}",
        binaries: [{ name: "runc" }],
        sideFiles: [{ url: "https://github.com/opencontainers/runc/releases/download/v{version}/runc.sha256sum", algorithm: "sha256" }],
      }),
    );
  }
  // crun (mode none with containerd 2: crun --cgroup-manager=disabled): C, no Go module, and
  // Debian 12's 1.8.1 refuses containerd 2.3's runtime spec, so built from Debian trixie's source
  // package (test/e2e/build/debian-source.mjs), served at crun's own release path (a bare binary
  // crun-{version}-linux-{arch}). It is linked against libyajl2 and libseccomp2 (scripts/test-deps.sh
  // --e2e); the product's built-in manifest takes the static crun of the CRI-O bundle instead.
  {
    const data = file(c.crun.bin.crun);
    const v = c.crun.version;
    m.put(`https://github.com/containers/crun/releases/download/${v}/crun-${v}-linux-${ARCH}`, data);
    note("crun", ["crun"]);
    common.push(
      artifact({
        id: "crun",
        component: "crun",
        version: v,
        format: "binary",
        data,
        source: `e2e mirror: sha256 of the served file, ${c.crun.source}`,
        when: { runtime: ["containerd"], mode: ["none"] },
        url: "https://github.com/containers/crun/releases/download/{version}/crun-{version}-linux-{arch}",
        binaries: [{ name: "crun" }],
      }),
    );
  }
  // pasta for the matrix's pasta cell: a host tool (found on the user's PATH, not downloaded by the
  // product), so it goes next to the mirror, in DIR/tools/pasta/, not into a manifest.
  {
    const dir = join(out, "tools", "pasta");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    // (pasta execs pasta.avx2 beside itself on a CPU with AVX2, as Debian's package ships it)
    for (const b of ["pasta", "pasta.avx2"]) {
      copyFileSync(c.passt.bin[b], join(dir, b));
      chmodSync(join(dir, b), 0o755);
    }
    note("passt", ["pasta", "pasta.avx2"]);
  }
  // CRI-O: the static bundle's layout, cri-o/bin/{crio,pinns,conmon,crun,runc}, .sha256sum side
  // file. crio and pinns from CRI-O's module, crun and runc the builds above, conmon Debian 12's
  // (C, no Go module). Not conmonrs: the product renders every CRI-O runtime handler with
  // runtime_type "oci", whose monitor is conmon, and installs no conmonrs.
  {
    const v = c["cri-o"].version;
    const conmon = file(join(debs.conmon.root, "usr/bin/conmon"));
    const bins = {
      crio: file(c["cri-o"].bin.crio),
      pinns: file(c["cri-o"].bin.pinns),
      conmon,
      crun: file(c.crun.bin.crun),
      runc: file(c.runc.bin.runc),
    };
    const data = tarGz(
      [
        { path: "cri-o", type: "dir" },
        { path: "cri-o/bin", type: "dir" },
        ...Object.entries(bins).map(([n, b]) => exe(`cri-o/bin/${n}`, b)),
      ],
      1,
    );
    const f = `cri-o.${ARCH}.v${v}.tar.gz`;
    m.put(`https://storage.googleapis.com/cri-o/artifacts/${f}`, data);
    m.put(`https://storage.googleapis.com/cri-o/artifacts/${f}.sha256sum`, `${hex("sha256", data)}  ${f}\n`);
    note("cri-o", ["crio", "pinns"]);
    sources.conmon = { source: `Debian 12 conmon ${debs.conmon.version} (${debs.conmon.deb})`, sha256: hex("sha256", conmon) };
    common.push(
      artifact({
        id: "cri-o",
        component: "cri-o",
        version: v,
        format: "tar.gz",
        data,
        source: `${built("cri-o")}; crun from ${c.crun.source}, runc from ${c.runc.source}, conmon Debian 12 ${debs.conmon.version} (${debs.conmon.deb}); no conmonrs`,
        when: { runtime: ["crio"] },
        url: "https://storage.googleapis.com/cri-o/artifacts/cri-o.{arch}.v{version}.tar.gz",
        binaries: Object.keys(bins).map((n) => ({ name: n, path: `cri-o/bin/${n}` })),
        sideFiles: [
          { url: "https://storage.googleapis.com/cri-o/artifacts/cri-o.{arch}.v{version}.tar.gz.sha256sum", algorithm: "sha256" },
        ],
      }),
    );
  }
  // CNI plugins: ./<plugin> at the top of the tgz, .sha256 side file.
  {
    const v = c["cni-plugins"].version;
    const data = tarGz([{ path: "./", type: "dir" }, ...CNI.map((p) => exe(`./${p}`, file(c["cni-plugins"].bin[p])))], 1);
    const f = `cni-plugins-linux-${ARCH}-v${v}.tgz`;
    m.put(`https://github.com/containernetworking/plugins/releases/download/v${v}/${f}`, data);
    m.put(`https://github.com/containernetworking/plugins/releases/download/v${v}/${f}.sha256`, `${hex("sha256", data)}  ${f}\n`);
    note("cni-plugins", CNI);
    common.push(
      artifact({
        id: "cni-plugins",
        component: "cni-plugins",
        version: v,
        format: "tar.gz",
        data,
        source: built("cni-plugins"),
        url: "https://github.com/containernetworking/plugins/releases/download/v{version}/cni-plugins-linux-{arch}-v{version}.tgz",
        binaries: CNI.map((p) => ({ name: p, path: `./${p}`, dir: "cni" })),
        sideFiles: [
          {
            url: "https://github.com/containernetworking/plugins/releases/download/v{version}/cni-plugins-linux-{arch}-v{version}.tgz.sha256",
            algorithm: "sha256",
          },
        ],
      }),
    );
  }
  // crictl: crictl-v{version}-linux-{arch}.tar.gz with crictl at the top, .sha256 side file.
  {
    const v = c.crictl.version;
    const data = tarGz([exe("crictl", file(c.crictl.bin.crictl))], 1);
    const f = `crictl-v${v}-linux-${ARCH}.tar.gz`;
    m.put(`https://github.com/kubernetes-sigs/cri-tools/releases/download/v${v}/${f}`, data);
    m.put(`https://github.com/kubernetes-sigs/cri-tools/releases/download/v${v}/${f}.sha256`, `${hex("sha256", data)}  ${f}\n`);
    note("crictl", ["crictl"]);
    common.push(
      artifact({
        id: "crictl",
        component: "crictl",
        version: v,
        format: "tar.gz",
        data,
        source: built("crictl"),
        url: "https://github.com/kubernetes-sigs/cri-tools/releases/download/v{version}/crictl-v{version}-linux-{arch}.tar.gz",
        binaries: [{ name: "crictl", path: "crictl" }],
        sideFiles: [
          {
            url: "https://github.com/kubernetes-sigs/cri-tools/releases/download/v{version}/crictl-v{version}-linux-{arch}.tar.gz.sha256",
            algorithm: "sha256",
          },
        ],
      }),
    );
  }
  // cri-dockerd (--runtime docker): cri-dockerd-{version}.{arch}.tgz with cri-dockerd/cri-dockerd, as
  // Mirantis publishes it (no checksum file upstream: the manifest holds the served file's).
  {
    const v = c["cri-dockerd"].version;
    const data = tarGz(
      [{ path: "cri-dockerd", type: "dir" }, exe("cri-dockerd/cri-dockerd", file(c["cri-dockerd"].bin["cri-dockerd"]))],
      1,
    );
    m.put(`https://github.com/Mirantis/cri-dockerd/releases/download/v${v}/cri-dockerd-${v}.${ARCH}.tgz`, data);
    note("cri-dockerd", ["cri-dockerd"]);
    common.push(
      artifact({
        id: "cri-dockerd",
        component: "cri-dockerd",
        version: v,
        format: "tar.gz",
        data,
        source: built("cri-dockerd"),
        when: { runtime: ["docker"] },
        url: "https://github.com/Mirantis/cri-dockerd/releases/download/v{version}/cri-dockerd-{version}.{arch}.tgz",
        binaries: [{ name: "cri-dockerd", path: "cri-dockerd/cri-dockerd" }],
        sideFiles: [],
      }),
    );
  }
  // RootlessKit: rootlesskit-x86_64.tar.gz with rootlesskit and rootlessctl at the top, SHA256SUMS;
  // slirp4netns (C, no Go module): Debian's, as slirp4netns-x86_64.
  {
    const v = c.rootlesskit.version;
    const data = tarGz(
      [exe("rootlesskit", file(c.rootlesskit.bin.rootlesskit)), exe("rootlessctl", file(c.rootlesskit.bin.rootlessctl))],
      1,
    );
    m.put(`https://github.com/rootless-containers/rootlesskit/releases/download/v${v}/rootlesskit-x86_64.tar.gz`, data);
    m.put(
      `https://github.com/rootless-containers/rootlesskit/releases/download/v${v}/SHA256SUMS`,
      `${hex("sha256", data)}  rootlesskit-x86_64.tar.gz\n`,
    );
    note("rootlesskit", ["rootlesskit", "rootlessctl"]);
    const slirp = file(join(debs.slirp4netns.root, "usr/bin/slirp4netns"));
    const sv = debs.slirp4netns.upstream;
    m.put(`https://github.com/rootless-containers/slirp4netns/releases/download/v${sv}/slirp4netns-x86_64`, slirp);
    m.put(
      `https://github.com/rootless-containers/slirp4netns/releases/download/v${sv}/SHA256SUMS`,
      `${hex("sha256", slirp)}  slirp4netns-x86_64\nSOURCE_DATE_EPOCH=0\n`,
    );
    sources.slirp4netns = {
      source: `Debian 12 slirp4netns ${debs.slirp4netns.version} (${debs.slirp4netns.deb})`,
      sha256: hex("sha256", slirp),
    };
    common.push(
      artifact({
        id: "rootlesskit",
        component: "rootlesskit",
        version: v,
        format: "tar.gz",
        data,
        source: built("rootlesskit"),
        archToken: "x86_64",
        url: "https://github.com/rootless-containers/rootlesskit/releases/download/v{version}/rootlesskit-{arch}.tar.gz",
        binaries: [
          { name: "rootlesskit", path: "rootlesskit" },
          { name: "rootlessctl", path: "rootlessctl" },
        ],
        sideFiles: [
          { url: "https://github.com/rootless-containers/rootlesskit/releases/download/v{version}/SHA256SUMS", algorithm: "sha256" },
        ],
      }),
      artifact({
        id: "slirp4netns",
        component: "slirp4netns",
        version: sv,
        format: "binary",
        data: slirp,
        archToken: "x86_64",
        when: { network: ["slirp4netns"] },
        source: `e2e mirror: sha256 of the served file, Debian 12 slirp4netns ${debs.slirp4netns.version} (${debs.slirp4netns.deb}; no Go module serves it)`,
        url: "https://github.com/rootless-containers/slirp4netns/releases/download/v{version}/slirp4netns-{arch}",
        binaries: [{ name: "slirp4netns" }],
        sideFiles: [
          { url: "https://github.com/rootless-containers/slirp4netns/releases/download/v{version}/SHA256SUMS", algorithm: "sha256" },
        ],
      }),
    );
  }
  // Kubernetes: kubernetes/server/bin/* of the server tarball, pinned by sha512 like upstream's
  // release notes, with the .sha512 side file dl.k8s.io has.
  const k8sIds = Object.keys(c)
    .filter((id) => /^kubernetes-\d+\.\d+$/.test(id))
    .sort((a, b) => Number(a.split(".")[1]) - Number(b.split(".")[1]));
  if (k8sIds.length < 2) throw new Error(`the test manifest must build two Kubernetes minors (found ${k8sIds.join(", ")})`);
  const [older, newer] = k8sIds.slice(-2).map((id) => c[id]);
  const [nmaj, nmin, npatch] = newer.version.split(".").map(Number);
  const sets = [
    { version: older.version, k: older, fault: "" },
    { version: newer.version, k: newer, fault: "" },
    { version: `${nmaj}.${nmin}.${npatch + 1}`, k: newer, fault: "apiserver-exit" },
  ];
  for (const id of k8sIds)
    for (const n of K8S)
      sources[`${n}@${c[id].version}`] = { source: c[id].source, path: c[id].bin[n], sha256: hex("sha256", file(c[id].bin[n])) };
  const written = [];
  for (const set of sets) {
    const content = (n) => (set.fault === "apiserver-exit" && n === "kube-apiserver" ? BROKEN_APISERVER : file(set.k.bin[n]));
    const data = tarGz(
      [
        { path: "kubernetes", type: "dir" },
        { path: "kubernetes/server", type: "dir" },
        { path: "kubernetes/server/bin", type: "dir" },
        ...K8S.map((n) => exe(`kubernetes/server/bin/${n}`, content(n))),
      ],
      1,
    );
    const url = `https://dl.k8s.io/v${set.version}/kubernetes-server-linux-${ARCH}.tar.gz`;
    m.put(url, data);
    // `--kubernetes-version` (assets/releases.json): each binary at dl.k8s.io's release/ path with the
    // bare-hex .sha256 beside it, as upstream publishes them (not for the broken release: it is
    // reached by its manifest only, and no channel names it).
    if (!set.fault) {
      for (const n of K8S) {
        const bin = `https://dl.k8s.io/release/v${set.version}/bin/linux/${ARCH}/${n}`;
        m.put(bin, content(n));
        m.put(`${bin}.sha256`, `${hex("sha256", content(n))}\n`);
      }
    }
    m.put(`${url}.sha512`, hex("sha512", data));
    const k8s = artifact({
      id: "kubernetes-server",
      component: "kubernetes",
      version: set.version,
      format: "tar.gz",
      data,
      alg: "sha512",
      source: set.fault
        ? `e2e mirror: sha512 of the served file: ${set.k.source}, its kube-apiserver replaced by one that exits (rollback test)`
        : `e2e mirror: sha512 of the served file, packed from ${set.k.source} built with ${summary.goVersion} (test/e2e/build)`,
      url: "https://dl.k8s.io/v{version}/kubernetes-server-linux-{arch}.tar.gz",
      binaries: K8S.map((n) => ({ name: n, path: `kubernetes/server/bin/${n}` })),
      sideFiles: [{ url: "https://dl.k8s.io/v{version}/kubernetes-server-linux-{arch}.tar.gz.sha512", algorithm: "sha512" }],
    });
    const manifest = {
      schema: 1,
      name: `rootless-k8s e2e: Kubernetes ${set.version}${set.fault ? " (broken release: kube-apiserver exits)" : ""}, components built from their Go modules`,
      description: "Served by test/e2e/mirror from 127.0.0.1; every checksum is that of the served file.",
      artifacts: [k8s.json, ...common.map((a) => a.json)],
    };
    const f = join(out, "manifests", `k8s-${set.version}.json`);
    writeFileSync(f, JSON.stringify(manifest, null, 2) + "\n");
    written.push(f);
  }
  // dl.k8s.io's channel files for the two minors served: stable-X.Y and latest-X.Y name each minor's
  // build, stable and latest the newer one.
  for (const k of [older, newer]) {
    const minor = k.version.split(".").slice(0, 2).join(".");
    m.put(`https://dl.k8s.io/release/stable-${minor}.txt`, `v${k.version}\n`);
    m.put(`https://dl.k8s.io/release/latest-${minor}.txt`, `v${k.version}\n`);
  }
  m.put("https://dl.k8s.io/release/stable.txt", `v${newer.version}\n`);
  m.put("https://dl.k8s.io/release/latest.txt", `v${newer.version}\n`);
  // Each companion's tags as GitHub's "List matching references" answers for its X.Y. (the shape of
  // docs.github.com/rest/git/refs), naming the version served here: the newest patch found is the
  // one built, so `--kubernetes-version` reads the tags as it does upstream and installs that build.
  const releases = JSON.parse(readFileSync(new URL("../../../assets/releases.json", import.meta.url), "utf8"));
  for (const a of common) {
    const t = releases.tags.repos[a.json.id];
    if (!t) continue;
    const xy = a.json.version.split(".").slice(0, 2).join(".");
    const ref = `refs/tags/${t.prefix}${a.json.version}`;
    const listing = [
      {
        ref,
        node_id: "",
        url: `https://api.github.com/repos/${t.repo}/git/${ref}`,
        object: { type: "commit", sha: "0".repeat(40), url: "" },
      },
    ];
    m.put(releases.tags.url.replace("{repo}", t.repo).replace("{prefix}", `${t.prefix}${xy}.`), `${JSON.stringify(listing)}\n`);
  }
  // Two minors ahead of the install set: never downloaded (the skew check refuses first), not served.
  const skewVersion = `${nmaj}.${nmin + 2}.0`;
  const skew = JSON.parse(readFileSync(written[1], "utf8"));
  skew.name = `rootless-k8s e2e: Kubernetes ${skewVersion} (not served: the skew check must refuse it)`;
  skew.artifacts[0].version = skewVersion;
  writeFileSync(join(out, "manifests", `k8s-${skewVersion}.json`), JSON.stringify(skew, null, 2) + "\n");
  const versions = { install: older.version, upgrade: newer.version, broken: sets[2].version, skew: skewVersion };
  writeFileSync(join(out, "versions.json"), JSON.stringify(versions, null, 2) + "\n");
  writeFileSync(
    join(out, "sources.json"),
    JSON.stringify(
      { goVersion: summary.goVersion, buildSeconds: summary.seconds, built: summary.built, cached: summary.cached, binaries: sources },
      null,
      2,
    ) + "\n",
  );
  return { manifests: written, versions, busybox: c.busybox.bin.busybox, summary };
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
