// The benchmark's iperf3 image, built offline like the e2e's images: Debian 12's iperf3 and its
// shared libraries (apt-get download, dpkg-deb -x: test/e2e/images/debian-packages.mjs) in one layer,
// /tmp for iperf3's stream buffers, `iperf3 -s` as its command.
// Usage: node iperf3-image.mjs --debs DIR --out FILE   (prints the image's name)
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { debianEntries, mergeEntries } from "../../e2e/images/debian-packages.mjs";
import { imageArchive } from "../../e2e/lib/oci-image.mjs";

const { values } = parseArgs({ options: { debs: { type: "string" }, out: { type: "string" } } });
if (!values.debs || !values.out) {
  console.error("usage: iperf3-image.mjs --debs DIR --out FILE");
  process.exit(2);
}
const iperf3 = debianEntries(["iperf3"], values.debs);
const version = (iperf3.versions.find((v) => v.startsWith("iperf3=")) ?? "iperf3=unknown").slice("iperf3=".length);
const name = `rootless-k8s.test/iperf3:${version.replace(/[^\w.-]/g, "_")}`;
// iperf3 and the shared libraries of the closure; not the rest of it (perl and debconf come in through
// the package's maintainer scripts, which never run here).
const wanted = (p) => p === "usr/bin/iperf3" || (/^(usr\/)?lib(64)?(\/|$)/.test(p.replace(/\/$/, "")) && !/perl|gconv/.test(p));
const entries = mergeEntries(
  ["tmp", "proc", "sys", "dev", "etc", "usr", "usr/bin"].map((d) => ({ path: d, type: "dir", mode: d === "tmp" ? 0o1777 : 0o755 })),
  iperf3.entries.filter((e) => wanted(e.path)),
  [
    { path: "etc/passwd", content: Buffer.from("root:x:0:0:root:/:/usr/bin/iperf3\n") },
    { path: "etc/group", content: Buffer.from("root:x:0:\n") },
  ],
);
const { archive } = imageArchive({ names: [name], entries, config: { Entrypoint: ["/usr/bin/iperf3"], Cmd: ["-s"] } });
writeFileSync(values.out, archive);
console.log(name);
