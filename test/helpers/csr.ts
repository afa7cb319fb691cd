// Real PKCS#10 certificate requests for tests, made in-process with @peculiar/x509 on WebCrypto: by
// default one as a worker's kubelet makes it for its serving certificate (Go's x509.CreateCertificateRequest
// from the kubelet's certificate manager: ECDSA P-256, ECDSA with SHA-256, subject O=system:nodes,
// CN=system:node:<name>, the node's name and IP addresses as SANs in an extensionRequest), and the
// CertificateSigningRequest object the API server would hold for it.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { webcrypto } from "node:crypto";
import type { CsrCondition, CsrObject } from "../../cli/plan/csr-approval";

x509.cryptoProvider.set(webcrypto as never);

export interface RequestSpec {
  /** Subject CNs (default none) and Os (default ["system:nodes"]). */
  cn?: string[];
  o?: string[];
  /** Subject alternative names; none: no extension at all. */
  sans?: { type: "dns" | "ip" | "email" | "url"; value: string }[];
  /** RSA 2048 (RSASSA-PKCS1-v1_5, SHA-256) instead of ECDSA P-256. */
  rsa?: boolean;
}

/** A PEM "CERTIFICATE REQUEST", self-signed with a fresh key. */
export async function requestPem(spec: RequestSpec = {}): Promise<string> {
  const keys = (await webcrypto.subtle.generateKey(
    spec.rsa
      ? { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }
      : { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["sign", "verify"],
  )) as webcrypto.CryptoKeyPair;
  const name: x509.JsonName = [];
  for (const o of spec.o ?? ["system:nodes"]) name.push({ O: [o] });
  for (const cn of spec.cn ?? []) name.push({ CN: [cn] });
  const req = await x509.Pkcs10CertificateRequestGenerator.create({
    name,
    keys: keys as never,
    signingAlgorithm: spec.rsa ? { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } : ({ name: "ECDSA", hash: "SHA-256" } as never),
    extensions: spec.sans?.length ? [new x509.SubjectAlternativeNameExtension(spec.sans)] : [],
  });
  return `${req.toString("pem")}\n`;
}

/** The kubelet's own request for node `node` with `ips`: O=system:nodes, CN=system:node:<node>, DNS <node> and the IPs. */
export function kubeletRequest(node: string, ips: string[], extra: RequestSpec = {}): Promise<string> {
  return requestPem({
    cn: [`system:node:${node}`],
    sans: [{ type: "dns", value: node }, ...ips.map((value) => ({ type: "ip" as const, value }))],
    ...extra,
  });
}

/** A CertificateSigningRequest as the API server returns it (list items carry no kind): a kubelet-serving one from node `node` by default. */
export function csrObject(
  name: string,
  pem: string,
  o: { node?: string; signer?: string; usages?: string[]; username?: string; groups?: string[]; conditions?: CsrCondition[] } = {},
): CsrObject {
  const node = o.node ?? "w1";
  return {
    metadata: { name, uid: `uid-${name}`, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: {
      request: Buffer.from(pem).toString("base64"),
      signerName: o.signer ?? "kubernetes.io/kubelet-serving",
      usages: o.usages ?? ["digital signature", "server auth"],
      username: o.username ?? `system:node:${node}`,
      groups: o.groups ?? ["system:nodes", "system:authenticated"],
      uid: `user-${node}`,
    },
    status: o.conditions ? { conditions: o.conditions } : {},
  };
}
