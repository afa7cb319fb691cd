// A deterministic ustar writer for tests: entries in the order given, mtime 0 and owner root (0:0)
// unless given, so the same inputs always give the same bytes (the e2e mirror's archives keep their
// checksums across runs, and a warm download cache stays warm). It also writes what node-tar would
// refuse to create, for the extraction tests: absolute paths, "..", escaping links, devices, setuid
// bits, foreign owners. Plain JavaScript, so the e2e scripts run it with node as it is.
import { gzipSync } from "node:zlib";

const TYPEFLAG = { file: "0", hardlink: "1", symlink: "2", char: "3", block: "4", dir: "5", fifo: "6" };
const DEFAULT_MODE = { file: 0o644, dir: 0o755, symlink: 0o777 };

/** @typedef {import("./tar.d.mts").TarEntry} TarEntry */

function octal(n, width) {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

/** @param {TarEntry} e @param {number} size */
function header(e, size) {
  const h = Buffer.alloc(512);
  let name = e.path;
  let prefix = "";
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf("/", 154);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
    if (Buffer.byteLength(name) > 100 || Buffer.byteLength(prefix) > 155) throw new Error(`tar name too long: ${e.path}`);
  }
  const type = e.type ?? "file";
  h.write(name, 0, 100, "utf8");
  h.write(octal(e.mode ?? DEFAULT_MODE[type] ?? 0o644, 8), 100, 8, "ascii");
  h.write(octal(e.uid ?? 0, 8), 108, 8, "ascii");
  h.write(octal(e.gid ?? 0, 8), 116, 8, "ascii");
  h.write(octal(size, 12), 124, 12, "ascii");
  h.write(octal(e.mtime ?? 0, 12), 136, 12, "ascii");
  h.write("        ", 148, 8, "ascii");
  h.write(TYPEFLAG[type], 156, 1, "ascii");
  if (e.linkpath) h.write(e.linkpath, 157, 100, "utf8");
  h.write("ustar\0", 257, 6, "ascii");
  h.write("00", 263, 2, "ascii");
  if (!e.uid) h.write("root", 265, 32, "ascii");
  if (!e.gid) h.write("root", 297, 32, "ascii");
  if (prefix) h.write(prefix, 345, 155, "utf8");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + " ", 148, 8, "ascii");
  return h;
}

/** An uncompressed tar of `entries`. @param {TarEntry[]} entries */
export function tarBuffer(entries) {
  const parts = [];
  for (const e of entries) {
    const body = (e.type ?? "file") === "file" ? Buffer.from(e.content ?? "") : Buffer.alloc(0);
    parts.push(header(e, body.length), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** gzip with a fixed header (no name, mtime 0): byte-for-byte reproducible. @param {TarEntry[]} entries */
export function tarGz(entries, level = 6) {
  return gzipSync(tarBuffer(entries), { level });
}
