// A tiny ustar writer for tests: real archives, including the hostile entries that node-tar would
// refuse to create (absolute paths, "..", escaping links, devices, setuid bits, foreign owners).
import { gzipSync } from "node:zlib";

export interface TarEntry {
  path: string;
  /** Default "file". */
  type?: "file" | "dir" | "symlink" | "hardlink" | "char" | "block" | "fifo";
  content?: Buffer | string;
  /** Default 0o755 for files, 0o755 for dirs. */
  mode?: number;
  uid?: number;
  gid?: number;
  linkpath?: string;
}

const TYPEFLAG = { file: "0", hardlink: "1", symlink: "2", char: "3", block: "4", dir: "5", fifo: "6" } as const;

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function header(e: TarEntry, size: number): Buffer {
  const h = Buffer.alloc(512, 0);
  let name = e.path;
  let prefix = "";
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf("/", 155);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  h.write(name, 0, 100, "utf8");
  h.write(octal(e.mode ?? 0o755, 8), 100, 8, "ascii");
  h.write(octal(e.uid ?? 0, 8), 108, 8, "ascii");
  h.write(octal(e.gid ?? 0, 8), 116, 8, "ascii");
  h.write(octal(size, 12), 124, 12, "ascii");
  h.write(octal(1_700_000_000, 12), 136, 12, "ascii");
  h.write("        ", 148, 8, "ascii");
  h.write(TYPEFLAG[e.type ?? "file"], 156, 1, "ascii");
  if (e.linkpath) h.write(e.linkpath, 157, 100, "utf8");
  h.write("ustar\0", 257, 6, "ascii");
  h.write("00", 263, 2, "ascii");
  h.write("root", 265, 32, "ascii");
  h.write("root", 297, 32, "ascii");
  if (prefix) h.write(prefix, 345, 155, "utf8");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + " ", 148, 8, "ascii");
  return h;
}

export function tarBuffer(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const body = e.type === undefined || e.type === "file" ? Buffer.from(e.content ?? "") : Buffer.alloc(0);
    parts.push(header(e, body.length), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

export function tarGz(entries: TarEntry[]): Buffer {
  return gzipSync(tarBuffer(entries));
}
