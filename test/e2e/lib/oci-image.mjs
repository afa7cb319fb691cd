// Tiny OCI image archives built offline from a static busybox, for `ctr images import`: a shell
// image for test containers and a "pause" image (sleep forever) for pod sandboxes. No registry is
// reachable from the test machines, so the images the node needs are imported instead of pulled.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { tarBuffer } from "../../helpers/tar.mjs";

const APPLETS = ["sh", "echo", "id", "cat", "sleep", "ls", "ip", "hostname", "wget", "nc", "ps", "mount", "true"];
const sha = (b) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/** Writes an OCI image layout tar for `name` (e.g. registry.k8s.io/pause:3.10) to `out`. */
export function writeImage({ busybox, out, name, cmd = ["/bin/sh"], arch = "amd64" }) {
  const bb = readFileSync(busybox);
  const layer = tarBuffer([
    ...["bin", "etc", "tmp", "proc", "sys", "dev", "run"].map((d) => ({ path: d, type: "dir", mode: d === "tmp" ? 0o1777 : 0o755 })),
    { path: "bin/busybox", content: bb, mode: 0o755 },
    ...APPLETS.map((a) => ({ path: `bin/${a}`, type: "symlink", linkpath: "busybox" })),
    { path: "etc/passwd", content: Buffer.from("root:x:0:0:root:/:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n") },
    // Owned by a non-root user of the image: unpacked rootless, it belongs to one of the host user's
    // subordinate ids, which a plain `rm -rf` by that user cannot remove (the --purge test).
    { path: "home", type: "dir" },
    { path: "home/app", type: "dir", mode: 0o700, uid: 1000, gid: 1000 },
    { path: "home/app/.profile", content: Buffer.from("# owned by uid 1000 in the image\n"), mode: 0o600, uid: 1000, gid: 1000 },
  ]);
  const config = Buffer.from(JSON.stringify({ architecture: arch, os: "linux", config: { Env: ["PATH=/bin"], Cmd: cmd }, rootfs: { type: "layers", diff_ids: [sha(layer)] } }));
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: sha(config), size: config.length },
      layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar", digest: sha(layer), size: layer.length }],
    }),
  );
  const tag = name.slice(name.lastIndexOf(":") + 1);
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ mediaType: "application/vnd.oci.image.manifest.v1+json", digest: sha(manifest), size: manifest.length, platform: { architecture: arch, os: "linux" }, annotations: { "io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag } }],
    }),
  );
  const blob = (b) => ({ path: `blobs/sha256/${sha(b).slice(7)}`, content: b });
  writeFileSync(out, tarBuffer([{ path: "oci-layout", content: Buffer.from('{"imageLayoutVersion":"1.0.0"}') }, { path: "index.json", content: index }, { path: "blobs", type: "dir" }, { path: "blobs/sha256", type: "dir" }, blob(layer), blob(config), blob(manifest)]));
  return out;
}

if (process.argv[1] && process.argv[1].endsWith("oci-image.mjs")) {
  const [busybox, out, name, cmd] = process.argv.slice(2);
  if (!busybox || !out || !name) {
    console.error("usage: oci-image.mjs BUSYBOX OUT.tar NAME [CMD_JSON]");
    process.exit(2);
  }
  writeImage({ busybox, out, name, cmd: cmd ? JSON.parse(cmd) : undefined });
  console.log(out);
}
