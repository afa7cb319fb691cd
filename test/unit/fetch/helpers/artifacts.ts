// Manifest entries for files served by the test server: the URL keeps an upstream-like path and a
// placeholder origin, which --mirror (the `mirror` option) replaces with the loopback server.
import { resolveArtifact } from "../../../../cli/fetch/select";
import type { HashAlgorithm, ManifestArtifact, ResolvedArtifact } from "../../../../cli/fetch/types";
import { sha256, sha512 } from "../../../helpers/hash";

export const UPSTREAM = "https://upstream.invalid";

export function testArtifact(o: {
  id: string;
  path: string;
  body: Buffer;
  format?: ManifestArtifact["format"];
  binaries?: ManifestArtifact["binaries"];
  algorithm?: HashAlgorithm;
  sideFiles?: ManifestArtifact["sideFiles"];
  version?: string;
}): ManifestArtifact {
  const algorithm = o.algorithm ?? "sha256";
  return {
    id: o.id,
    component: o.id,
    version: o.version ?? "1.0.0",
    url: UPSTREAM + o.path,
    arch: { amd64: "amd64" },
    format: o.format ?? "binary",
    binaries: o.binaries ?? [{ name: o.id }],
    checksums: { amd64: { algorithm, value: algorithm === "sha256" ? sha256(o.body) : sha512(o.body), source: "test fixture" } },
    ...(o.sideFiles ? { sideFiles: o.sideFiles } : {}),
  };
}

export const resolved = (a: ManifestArtifact): ResolvedArtifact => resolveArtifact(a, "amd64", "test");

/** Random bytes (incompressible, so gzip and node-tar's decompression-ratio guard stay realistic). */
export function randomBody(size: number, seed = 1): Buffer {
  const b = Buffer.alloc(size);
  let x = seed * 2654435761;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}
