// Builds the images the e2e pods run, offline, as OCI image-layout archives that
// `rootless-k8s image load` takes (no registry is reachable from the test machines):
//   pause    build/pause/linux/pause.c of the Kubernetes module, compiled static with gcc, tagged
//            as build/pause/Makefile's TAG (the sandbox image containerd's CRI asks for)
//   busybox  busybox 1.37.0 built static with upstream's defconfig (test/e2e/build/debian-source.mjs) with every applet, tagged as test/utils/image/manifest.go's BusyBox
//   agnhost  test/images/agnhost built from the Kubernetes module (test/e2e/build), with what
//            upstream's Dockerfile adds to Alpine (bind-tools, curl, netcat-openbsd, iproute2, iperf,
//            bash, util-linux; dash as /bin/sh) taken from Debian 12's packages over the busybox layer (upstream's
//            conformance tests run `nc -v -t`, `dig`, `curl` in it), its porter certificate, /uploads,
//            the agnhost-2 link and its users; tagged as test/images/agnhost/VERSION (= manifest.go's Agnhost)
//   coredns  the coredns binary built from github.com/coredns/coredns (test/e2e/build), alone in its
//            image as upstream's, tagged registry.k8s.io/coredns/coredns:<its version>; the e2e
//            manifests pin it by this digest (the dns add-on's image)
//   local-path-provisioner  the provisioner built from github.com/rancher/local-path-provisioner,
//            tagged as upstream's; the storage add-on's image (its helper is the busybox image)
//   metrics-server  metrics-server built from sigs.k8s.io/metrics-server, alone in its image as
//            upstream's (distroless: the binary and a writable /tmp), tagged as upstream's
// Every name and tag is read from the module source at the version the test manifest builds, so the
// images are exactly the ones the kubelet, containerd and upstream's e2e suite ask for.
//
// Writes OUT/<role>.tar and OUT/images.json: [{role, name, names, file, digest, source}].
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { busyboxEntries, imageArchive } from "../lib/oci-image.mjs";
import { debianEntries, mergeEntries } from "./debian-packages.mjs";

const GO = process.env.GO ?? "/usr/local/go/bin/go";

/** The module's source folder (`go mod download -json`). */
export function moduleDir(module, version) {
  const j = JSON.parse(
    execFileSync(GO, ["mod", "download", "-json", `${module}@${version}`], {
      encoding: "utf8",
      env: { ...process.env, GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local" },
    }),
  );
  if (j.Error) throw new Error(`${module}@${version}: ${j.Error}`);
  return j.Dir;
}

/** `configs[<key>] = Config{<registry>, "<name>", "<tag>"}` of test/utils/image/manifest.go. */
export function manifestTag(src, key) {
  const text = readFileSync(join(src, "test/utils/image/manifest.go"), "utf8");
  const m = new RegExp(`configs\\[${key}\\] = Config\\{list\\.(\\w+), "([^"]+)", "([^"]+)"\\}`).exec(text);
  if (!m) throw new Error(`test/utils/image/manifest.go names no ${key} image`);
  const registry = { PromoterE2eRegistry: "registry.k8s.io/e2e-test-images", GcRegistry: "registry.k8s.io" }[m[1]];
  if (!registry) throw new Error(`manifest.go: ${key} is in registry ${m[1]}, which this builder does not know`);
  return `${registry}/${m[2]}:${m[3]}`;
}

/**
 * Debian 12's counterparts of what test/images/agnhost/Dockerfile adds with `apk add` to Alpine,
 * and of Alpine's own getent (musl-utils; here libc-bin's), which the DNS tests' probes run.
 */
const AGNHOST_DEBS = ["bind9-dnsutils", "curl", "netcat-openbsd", "iproute2", "iperf", "bash", "util-linux", "dash", "libc-bin"];

/**
 * The agnhost image's tar entries, as test/images/agnhost/Dockerfile lays it out: `src` the
 * Kubernetes module's folder, `agnhost` the binary, `debs` the .deb cache folder.
 */
export function agnhostEntries({ src, agnhost, busybox, debs }) {
  const porter = join(src, "test/images/agnhost/porter");
  return mergeEntries(busyboxEntries(busybox), debianEntries(AGNHOST_DEBS, debs).entries, [
    // update-alternatives' links (no maintainer script runs): nc is netcat-openbsd, as on Alpine.
    { path: "bin/nc", type: "symlink", linkpath: "/bin/nc.openbsd" },
    // /bin/sh is dash, as on Debian: a shell that looks commands up on PATH. A busybox built with
    // applets preferred (Debian's) runs its own nc, which has no -v, for the Service tests' `sh -c "nc -v ..."`.
    { path: "bin/sh", type: "symlink", linkpath: "dash" },
    { path: "usr/local", type: "dir" },
    { path: "usr/local/bin", type: "dir" },
    { path: "usr/local/bin/iperf", type: "symlink", linkpath: "/usr/bin/iperf" },
    { path: "uploads", type: "dir" },
    { path: "localhost.crt", content: readFileSync(join(porter, "localhost.crt")) },
    { path: "localhost.key", content: readFileSync(join(porter, "localhost.key")) },
    { path: "agnhost", content: readFileSync(agnhost), mode: 0o755 },
    { path: "agnhost-2", type: "symlink", linkpath: "agnhost" },
    {
      path: "etc/passwd",
      content: Buffer.from(
        "root:x:0:0:root:/:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\nuser-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n",
      ),
    },
    {
      path: "etc/group",
      content: Buffer.from("root:x:0:\napp:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\nnogroup:x:65534:\n"),
    },
  ]);
}

/**
 * Builds the images into `out`. `kubernetes`: {module, version} of the Kubernetes source
 * (the agnhost build's); `agnhost`: the built agnhost binary; `busybox`: the static busybox (test/e2e/build/debian-source.mjs);
 * `debs`: the folder the Debian packages of the agnhost image are kept in;
 * `coredns`, `localPath`, `metricsServer`: {path, version} of the add-ons' built binaries;
 * `sandboxImages`: extra names the pause image also carries (the runtime's default sandbox image).
 */
export function buildImages({ out, kubernetes, agnhost, busybox, debs, coredns, localPath, metricsServer, sandboxImages = [] }) {
  mkdirSync(out, { recursive: true });
  const src = moduleDir(kubernetes.module, kubernetes.version);
  const from = `${kubernetes.module}@${kubernetes.version}`;
  const list = [];
  const write = (role, names, entries, config, source) => {
    const { archive, digest } = imageArchive({ names, entries, config });
    const file = join(out, `${role}.tar`);
    writeFileSync(file, archive);
    list.push({ role, name: names[0], names, file, digest, source });
  };

  // pause: static, as upstream's Makefile builds it (CFLAGS -Os -Wall -Werror -static -DVERSION=...).
  const tag = /^TAG \?= (\S+)$/m.exec(readFileSync(join(src, "build/pause/Makefile"), "utf8"))?.[1];
  if (!tag) throw new Error("build/pause/Makefile has no TAG");
  const pauseName = `registry.k8s.io/pause:${tag}`;
  if (pauseName !== manifestTag(src, "Pause"))
    throw new Error(`pause: Makefile TAG ${tag} differs from manifest.go's ${manifestTag(src, "Pause")}`);
  const tmp = mkdtempSync(join(tmpdir(), "rk8s-pause-"));
  try {
    const bin = join(tmp, "pause");
    execFileSync(
      "gcc",
      ["-Os", "-Wall", "-Werror", "-static", `-DVERSION=v${tag}-rk8s-e2e`, "-o", bin, join(src, "build/pause/linux/pause.c")],
      { stdio: ["ignore", "inherit", "inherit"] },
    );
    const names = [pauseName, ...sandboxImages.filter((n) => n !== pauseName)];
    write(
      "pause",
      names,
      [{ path: "pause", content: readFileSync(bin), mode: 0o755 }],
      { Entrypoint: ["/pause"], User: "65535:65535" },
      `${from} build/pause/linux/pause.c (gcc -static)`,
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }

  const bb = busyboxEntries(busybox);
  write(
    "busybox",
    [manifestTag(src, "BusyBox")],
    bb,
    { Cmd: ["sh"] },
    "busybox 1.37.0, upstream's defconfig built static (Debian trixie's source package)",
  );

  const version = readFileSync(join(src, "test/images/agnhost/VERSION"), "utf8").trim();
  const agnName = `registry.k8s.io/e2e-test-images/agnhost:${version}`;
  if (agnName !== manifestTag(src, "Agnhost"))
    throw new Error(`agnhost: VERSION ${version} differs from manifest.go's ${manifestTag(src, "Agnhost")}`);
  write(
    "agnhost",
    [agnName],
    agnhostEntries({ src, agnhost, busybox, debs }),
    { Entrypoint: ["/agnhost"], Cmd: ["pause"] },
    `${from} test/images/agnhost with Debian 12's ${AGNHOST_DEBS.join(", ")} over the busybox layer`,
  );

  // Root in the pod's user namespace, which the pod spec gives NET_BIND_SERVICE for port 53
  // (upstream's image runs as nonroot with a file capability on /coredns instead).
  write(
    "coredns",
    [`registry.k8s.io/coredns/coredns:${coredns.version}`],
    [
      { path: "etc", type: "dir" },
      { path: "tmp", type: "dir", mode: 0o1777 },
      { path: "coredns", content: readFileSync(coredns.path), mode: 0o755 },
    ],
    { Entrypoint: ["/coredns"] },
    `github.com/coredns/coredns@${coredns.version}`,
  );

  // The provisioner alone in its image, on PATH as upstream's (its helper pods run the busybox image).
  write(
    "local-path-provisioner",
    [`docker.io/rancher/local-path-provisioner:${localPath.version}`],
    [
      { path: "usr", type: "dir" },
      { path: "usr/bin", type: "dir" },
      { path: "tmp", type: "dir", mode: 0o1777 },
      { path: "usr/bin/local-path-provisioner", content: readFileSync(localPath.path), mode: 0o755 },
    ],
    { Entrypoint: [] },
    `github.com/rancher/local-path-provisioner@${localPath.version}`,
  );

  // Upstream's image is the binary on distroless/static, run as a non-root user; the add-on gives
  // it /tmp as an emptyDir for the serving certificate it makes itself.
  write(
    "metrics-server",
    [`registry.k8s.io/metrics-server/metrics-server:${metricsServer.version}`],
    [
      { path: "tmp", type: "dir", mode: 0o1777 },
      { path: "metrics-server", content: readFileSync(metricsServer.path), mode: 0o755 },
    ],
    { Entrypoint: ["/metrics-server"], User: "65534:65534" },
    `sigs.k8s.io/metrics-server@${metricsServer.version}`,
  );

  writeFileSync(join(out, "images.json"), `${JSON.stringify(list, null, 2)}\n`);
  return list;
}

/** containerd's default sandbox image (DefaultSandboxImage in its CRI config) at `version`. */
export function containerdSandboxImage(module, version) {
  const dir = moduleDir(module, version);
  for (const f of ["internal/cri/config/config.go", "pkg/cri/config/config.go"]) {
    try {
      const m = /DefaultSandboxImage\s*=\s*"([^"]+)"/.exec(readFileSync(join(dir, f), "utf8"));
      if (m) return m[1];
    } catch {}
  }
  throw new Error(`${module}@${version}: no DefaultSandboxImage found`);
}
