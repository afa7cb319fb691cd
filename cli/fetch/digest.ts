// Checksums: hashing a file or a stream prefix, and reading upstream side files (a bare digest,
// or sha256sum-style "<hex>  <name>" lines).
import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { DIGEST_HEX_LENGTH } from "./manifest";
import type { HashAlgorithm } from "./types";

/** Feeds the whole file into `hash` (used to resume a partial download, and to re-check the cache). */
export async function hashInto(hash: Hash, file: string, signal?: AbortSignal): Promise<number> {
  let n = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20, signal })) {
    hash.update(chunk as Buffer);
    n += (chunk as Buffer).length;
  }
  return n;
}

export async function hashFile(file: string, algorithm: HashAlgorithm, signal?: AbortSignal): Promise<string> {
  const h = createHash(algorithm);
  await hashInto(h, file, signal);
  return h.digest("hex");
}

/**
 * The digest a side file gives for `fileName`: the file is either one bare hex digest
 * (dl.k8s.io, crictl) or lines "<hex>  <name>" / "<hex> *<name>" (SHA256SUMS, .sha256sum).
 * Null when it has no entry for the file.
 */
export function digestFromSideFile(text: string, fileName: string, algorithm: HashAlgorithm): string | null {
  const len = DIGEST_HEX_LENGTH[algorithm];
  const trimmed = text.trim();
  if (new RegExp(`^[0-9a-fA-F]{${len}}$`).test(trimmed)) return trimmed.toLowerCase();
  const line = new RegExp(`^([0-9a-fA-F]{${len}})\\s+\\*?(?:\\./)?(\\S.*?)\\s*$`);
  for (const l of trimmed.split(/\r?\n/)) {
    const m = line.exec(l.trim());
    if (!m?.[1] || !m[2]) continue;
    const name = m[2].split("/").at(-1);
    if (name === fileName) return m[1].toLowerCase();
  }
  return null;
}
