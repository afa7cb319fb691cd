// A deterministic ustar writer: entries in the given order, mtime 0, owner 0:0 unless given, so the same inputs
// always give the same bytes (and the same checksum: a warm download cache stays warm across runs).
// Used for the mirror's upstream-layout archives and for the offline OCI test images.
import { gzipSync } from "node:zlib";

/** @typedef {{ name: string, type?: "file"|"dir"|"symlink", data?: Buffer, mode?: number, linkname?: string, uid?: number, gid?: number }} TarEntry */

function octal(n, width) {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function header(e) {
  const h = Buffer.alloc(512);
  let name = e.name;
  let prefix = "";
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf("/", 154);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
    if (Buffer.byteLength(name) > 100 || Buffer.byteLength(prefix) > 155) throw new Error(`tar name too long: ${e.name}`);
  }
  const type = e.type ?? "file";
  const size = type === "file" ? e.data.length : 0;
  h.write(name, 0, 100, "utf8");
  h.write(octal(e.mode ?? (type === "dir" ? 0o755 : type === "symlink" ? 0o777 : 0o644), 8), 100, 8, "ascii");
  h.write(octal(e.uid ?? 0, 8), 108, 8, "ascii");
  h.write(octal(e.gid ?? 0, 8), 116, 8, "ascii");
  h.write(octal(size, 12), 124, 12, "ascii");
  h.write(octal(0, 12), 136, 12, "ascii");
  h.write("        ", 148, 8, "ascii");
  h.write(type === "dir" ? "5" : type === "symlink" ? "2" : "0", 156, 1, "ascii");
  if (e.linkname) h.write(e.linkname, 157, 100, "utf8");
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

/** @param {TarEntry[]} entries */
export function tar(entries) {
  const parts = [];
  for (const e of entries) {
    parts.push(header(e));
    if ((e.type ?? "file") === "file") {
      parts.push(e.data);
      const pad = (512 - (e.data.length % 512)) % 512;
      if (pad) parts.push(Buffer.alloc(pad));
    }
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** gzip with a fixed header (no name, mtime 0): byte-for-byte reproducible. */
export function tarGz(entries, level = 6) {
  return gzipSync(tar(entries), { level });
}
