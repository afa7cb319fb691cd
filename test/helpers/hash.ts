// Digests for test assertions, in the hex form the manifest and SHA256SUMS use.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

export const sha256 = (data: Buffer | string) => createHash("sha256").update(data).digest("hex");
export const sha512 = (data: Buffer | string) => createHash("sha512").update(data).digest("hex");
export const sha256File = (file: string) => sha256(readFileSync(file));
