// The images upstream's conformance suite asks for beyond the node's own (test/e2e/images/build-images.mjs
// builds pause, busybox and agnhost), built offline as OCI archives under the exact names of
// test/utils/image/manifest.go at the suite's Kubernetes version:
//   agnhost (AgnhostPrev)  test/images/agnhost of the Kubernetes module the proxy serves nearest to that
//                          agnhost version (test/e2e/build/components.json "agnhost-prev": v1.34.4's
//                          agnhost 2.56; no served version carries 2.55), laid out as the agnhost
//                          image: a different image from Agnhost, which the Deployment and kubectl
//                          tests roll between
//   kitten, nautilus       test/images/{kitten,nautilus}: agnhost with the folder's html files, CMD test-webserver
//   nginx (Nginx)          Debian 12's nginx-light and its dependencies over the busybox layer,
//                          serving Debian's default site on port 80 (upstream: nginx on Alpine)
//   nonewprivs             test/images/nonewprivs: nnp (built from the module, test/e2e/build/components.json
//                          "nonewprivs") at /usr/local/bin/nnp with its setuid bit, over the busybox
//                          layer (upstream: Alpine), CMD ["nnp"]
//   glibc-dns-testing      Debian 12's bind9-dnsutils (dig) and libc-bin (getent) with their
//                          dependencies over the busybox layer (upstream: debian:bookworm-slim + dnsutils)
// Writes OUT/<role>.tar and OUT/images.json, as build-images.mjs does.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { busyboxEntries, imageArchive } from "../lib/oci-image.mjs";
import { agnhostEntries, manifestTag, moduleDir } from "./build-images.mjs";
import { debianEntries, mergeEntries } from "./debian-packages.mjs";

/**
 * `kubernetes`: {module, version} of the suite; `agnhost`, `agnhostPrev`: {path, from} of the two
 * agnhost builds; `nnp`: {path, from} of test/images/nonewprivs; `busybox`: the static busybox;
 * `debs`: the .deb cache folder.
 */
export function buildConformanceImages({ out, kubernetes, agnhost, agnhostPrev, nnp, busybox, debs }) {
  mkdirSync(out, { recursive: true });
  const src = moduleDir(kubernetes.module, kubernetes.version);
  const from = `${kubernetes.module}@${kubernetes.version}`;
  const list = [];
  const write = (role, name, entries, config, source) => {
    const { archive, digest } = imageArchive({ names: [name], entries, config });
    const file = join(out, `${role}.tar`);
    writeFileSync(file, archive);
    list.push({ role, name, names: [name], file, digest, source });
  };
  const bb = busyboxEntries(busybox);
  const agn = agnhostEntries({ src, agnhost: agnhost.path, busybox, debs });

  write(
    "agnhost-prev",
    manifestTag(src, "AgnhostPrev"),
    agnhostEntries({ src, agnhost: agnhostPrev.path, busybox, debs }),
    { Entrypoint: ["/agnhost"], Cmd: ["pause"] },
    `${agnhostPrev.from} test/images/agnhost, laid out as the agnhost image`,
  );

  // kitten and nautilus: FROM agnhost, COPY html/<x>.jpg and html/data.json, CMD ["test-webserver"].
  for (const [role, key] of [
    ["kitten", "Kitten"],
    ["nautilus", "Nautilus"],
  ]) {
    const html = join(src, "test/images", role, "html");
    const files = readdirSync(html).map((f) => ({ path: f, content: readFileSync(join(html, f)) }));
    write(
      role,
      manifestTag(src, key),
      [...agn, ...files],
      { Entrypoint: ["/agnhost"], Cmd: ["test-webserver"] },
      `${from} test/images/${role} over the agnhost image`,
    );
  }

  const nginx = debianEntries(["nginx-light"], debs);
  write(
    "nginx",
    manifestTag(src, "Nginx"),
    mergeEntries(bb, nginx.entries, [
      // What nginx-common's postinst would make: the default site enabled, its log and state folders,
      // and www-data (base-passwd's uid 33) for its worker processes.
      { path: "etc/nginx/sites-enabled", type: "dir" },
      { path: "etc/nginx/sites-enabled/default", type: "symlink", linkpath: "/etc/nginx/sites-available/default" },
      { path: "var/log/nginx", type: "dir" },
      { path: "var/lib/nginx", type: "dir" },
      { path: "run", type: "dir" },
      {
        path: "etc/passwd",
        content: Buffer.from(
          "root:x:0:0:root:/:/bin/sh\nwww-data:x:33:33:www-data:/var/www:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n",
        ),
      },
      { path: "etc/group", content: Buffer.from("root:x:0:\nwww-data:x:33:\nnogroup:x:65534:\n") },
    ]),
    { Entrypoint: [], Cmd: ["/usr/sbin/nginx", "-g", "daemon off;"], ExposedPorts: { "80/tcp": {} } },
    `Debian 12 ${nginx.versions.find((v) => v.startsWith("nginx-light=")) ?? "nginx-light"} with its dependencies over the busybox layer`,
  );

  // The Dockerfile's COPY nnp /usr/local/bin/nnp and chmod +s: set-user-ID root, so that only
  // allowPrivilegeEscalation: false keeps a non-root user's effective uid.
  write(
    "nonewprivs",
    manifestTag(src, "Nonewprivs"),
    [
      ...bb,
      { path: "usr", type: "dir" },
      { path: "usr/local", type: "dir" },
      { path: "usr/local/bin", type: "dir" },
      { path: "usr/local/bin/nnp", content: readFileSync(nnp.path), mode: 0o6755 },
    ],
    { Cmd: ["nnp"] },
    `${nnp.from} test/images/nonewprivs over the busybox layer`,
  );

  const dns = debianEntries(["bind9-dnsutils", "libc-bin"], debs);
  write(
    "glibc-dns-testing",
    manifestTag(src, "GlibcDnsTesting"),
    mergeEntries(bb, dns.entries),
    { Cmd: ["sh"] },
    `Debian 12 ${dns.versions.find((v) => v.startsWith("bind9-dnsutils=")) ?? "bind9-dnsutils"} and libc-bin with their dependencies over the busybox layer`,
  );

  writeFileSync(join(out, "images.json"), `${JSON.stringify(list, null, 2)}\n`);
  return list;
}
