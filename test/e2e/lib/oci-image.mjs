// OCI image-layout archives built offline, for `rootless-k8s image load` (no registry is reachable
// from the test machines, so the images the node runs are loaded instead of pulled). One layer of
// the given files, deterministic bytes (mtime 0), every name of the image in index.json
// (io.containerd.image.name for containerd, org.opencontainers.image.ref.name for the OCI tools).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { tarBuffer } from "../../helpers/tar.mjs";

/** Every applet the static busybox has (`busybox --list`), each a symlink to /bin/busybox. */
function applets(busybox) {
  const list = execFileSync(busybox, ["--list"], { encoding: "utf8" })
    .split("\n")
    .filter((a) => /^[\w.[-]+$/.test(a) && a !== "busybox");
  if (!list.includes("sh")) throw new Error(`${busybox} --list has no sh: not a busybox`);
  return list;
}
const sha = (b) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/** Root folders, /bin/busybox with its applets, /etc/passwd and /etc/group. */
export function busyboxEntries(busybox) {
  return [
    ...["bin", "etc", "tmp", "proc", "sys", "dev", "run", "var"].map((d) => ({ path: d, type: "dir", mode: d === "tmp" ? 0o1777 : 0o755 })),
    { path: "bin/busybox", content: readFileSync(busybox), mode: 0o755 },
    ...applets(busybox).map((a) => ({ path: `bin/${a}`, type: "symlink", linkpath: "busybox" })),
    {
      path: "etc/passwd",
      content: Buffer.from("root:x:0:0:root:/:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n"),
    },
    { path: "etc/group", content: Buffer.from("root:x:0:\napp:x:1000:\nnogroup:x:65534:\n") },
    // Owned by a non-root user of the image: unpacked rootless, it belongs to one of the host user's
    // subordinate ids, which a plain `rm -rf` by that user cannot remove (the --purge test).
    { path: "home", type: "dir" },
    { path: "home/app", type: "dir", mode: 0o700, uid: 1000, gid: 1000 },
    { path: "home/app/.profile", content: Buffer.from("# owned by uid 1000 in the image\n"), mode: 0o600, uid: 1000, gid: 1000 },
  ];
}

/**
 * The OCI image-layout tar of one image: `entries` (tar entries, see test/helpers/tar.mjs) as its
 * one layer, `config` its runtime config (Entrypoint, Cmd, Env, User, WorkingDir), tagged with every
 * name in `names`. Returns {archive, digest} (digest: the manifest's).
 */
export function imageArchive({ names, entries, config, arch = "amd64" }) {
  const layer = tarBuffer(entries);
  const cfg = Buffer.from(
    JSON.stringify({
      architecture: arch,
      os: "linux",
      config: { Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], ...config },
      rootfs: { type: "layers", diff_ids: [sha(layer)] },
    }),
  );
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: sha(cfg), size: cfg.length },
      layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar", digest: sha(layer), size: layer.length }],
    }),
  );
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      manifests: names.map((name) => ({
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        digest: sha(manifest),
        size: manifest.length,
        platform: { architecture: arch, os: "linux" },
        annotations: { "io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.slice(name.lastIndexOf(":") + 1) },
      })),
    }),
  );
  const blob = (b) => ({ path: `blobs/sha256/${sha(b).slice(7)}`, content: b });
  const archive = tarBuffer([
    { path: "oci-layout", content: Buffer.from('{"imageLayoutVersion":"1.0.0"}') },
    { path: "index.json", content: index },
    { path: "blobs", type: "dir" },
    { path: "blobs/sha256", type: "dir" },
    blob(layer),
    blob(cfg),
    blob(manifest),
  ]);
  return { archive, digest: sha(manifest) };
}

/** A busybox image for `name` written to `out` (the e2e tool's `oci-image` command). */
export function writeImage({ busybox, out, name, cmd = ["/bin/sh"], arch = "amd64" }) {
  writeFileSync(out, imageArchive({ names: [name], entries: busyboxEntries(busybox), config: { Cmd: cmd }, arch }).archive);
  return out;
}
