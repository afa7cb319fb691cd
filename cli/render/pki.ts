// The node's PKI, generated in-process with @peculiar/x509 on WebCrypto: a cluster CA, an etcd CA,
// a front-proxy CA (the aggregation layer: the API server's client certificate towards extension
// API servers such as metrics-server, which they trust through the requestheader CA), the serving
// and client certificates of every component, and the service-account key pair.
// ECDSA P-256 by default, RSA 2048 on request. Generation is separate from rendering so a
// re-install reuses what is still good (same CA, same algorithm, SANs still covered, not expiring),
// and rendering the same plan with the same PKI gives byte-identical files.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { webcrypto } from "node:crypto";
import * as path from "node:path";
import type { Plan, PkiAlgorithm } from "../plan/plan";
import { PORTS_USER } from "./ports";
import { APPROVER_USER } from "./approver-rbac";
import { advertisedIP } from "../plan/node";

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
type SigningAlgorithm = webcrypto.AlgorithmIdentifier | webcrypto.EcdsaParams | webcrypto.RsaPssParams;

x509.cryptoProvider.set(webcrypto as never);
const subtle = webcrypto.subtle;

export interface KeyPairPem {
  cert: string;
  key: string;
}

export type CaName = "ca" | "etcdCa" | "frontProxyCa";
export type CertName =
  | "apiServer"
  | "apiServerKubeletClient"
  | "apiServerEtcdClient"
  | "etcdServer"
  | "kubeletClient"
  | "kubeletServing"
  | "controllerManager"
  | "scheduler"
  | "kubeProxy"
  | "admin"
  | "frontProxyClient"
  | "ports"
  | "csrApprover";

/** Certificates only some plans have (the port publisher's: plan.publish on; the approver's: a server). */
type OptionalCert = "ports" | "csrApprover";

export interface Pki extends Record<CaName | Exclude<CertName, OptionalCert>, KeyPairPem>, Partial<Record<OptionalCert, KeyPairPem>> {
  algorithm: PkiAlgorithm;
  serviceAccount: { publicKey: string; privateKey: string };
}

export interface CertSpec {
  name: CertName;
  /** File name below paths.pkiDir, without extension. */
  file: string;
  issuer: CaName;
  commonName: string;
  organization?: string;
  usages: ("server" | "client")[];
  dns: string[];
  ips: string[];
}

export const CA_FILES: Record<CaName, string> = { ca: "ca", etcdCa: "etcd-ca", frontProxyCa: "front-proxy-ca" };
const CA_SUBJECTS: Record<CaName, string> = {
  ca: "rootless-k8s-ca",
  etcdCa: "rootless-k8s-etcd-ca",
  frontProxyCa: "rootless-k8s-front-proxy-ca",
};
const CA_NAMES = Object.keys(CA_FILES) as CaName[];
/** The front-proxy client's name: the API server's --requestheader-allowed-names. */
export const FRONT_PROXY_CLIENT = "front-proxy-client";
export const SERVICE_ACCOUNT_FILES = { publicKey: "sa.pub", privateKey: "sa.key" } as const;

const CA_DAYS = 3650;
const LEAF_DAYS = 365;
/** A leaf closer than this to expiry is renewed on re-install. */
const RENEW_BEFORE_DAYS = 30;
const DAY_MS = 86_400_000;

/** The DNS names a client may use for the API server from inside the cluster. */
const KUBERNETES_SERVICE_NAMES = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"];

/** Every certificate of the node, derived from the plan. */
export function certSpecs(plan: Plan): CertSpec[] {
  const node = plan.node.name;
  const unique = (xs: string[]) => [...new Set(xs)];
  const apiDns = unique(["localhost", ...KUBERNETES_SERVICE_NAMES, node, ...plan.pki.hostnames]);
  const apiIps = unique(["127.0.0.1", plan.cidrs.firstServiceIP, plan.network.namespaceIP, ...plan.pki.hostAddresses]);
  return [
    { name: "apiServer", file: "apiserver", issuer: "ca", commonName: "kube-apiserver", usages: ["server"], dns: apiDns, ips: apiIps },
    {
      name: "apiServerKubeletClient",
      file: "apiserver-kubelet-client",
      issuer: "ca",
      commonName: "kube-apiserver-kubelet-client",
      organization: "system:masters",
      usages: ["client"],
      dns: [],
      ips: [],
    },
    {
      name: "apiServerEtcdClient",
      file: "apiserver-etcd-client",
      issuer: "etcdCa",
      commonName: "kube-apiserver-etcd-client",
      usages: ["client"],
      dns: [],
      ips: [],
    },
    // One certificate for etcd's client and peer listeners (a single member on loopback).
    {
      name: "etcdServer",
      file: "etcd-server",
      issuer: "etcdCa",
      commonName: node,
      usages: ["server", "client"],
      dns: ["localhost", node],
      ips: ["127.0.0.1"],
    },
    {
      name: "kubeletClient",
      file: "kubelet-client",
      issuer: "ca",
      commonName: `system:node:${node}`,
      organization: "system:nodes",
      usages: ["client"],
      dns: [],
      ips: [],
    },
    {
      name: "kubeletServing",
      file: "kubelet-serving",
      issuer: "ca",
      commonName: `system:node:${node}`,
      organization: "system:nodes",
      usages: ["server"],
      dns: unique(["localhost", node]),
      // The API server reaches the kubelet at the node's advertised address (--node-ip).
      ips: unique(["127.0.0.1", plan.network.namespaceIP, advertisedIP(plan)]),
    },
    {
      name: "controllerManager",
      file: "controller-manager",
      issuer: "ca",
      commonName: "system:kube-controller-manager",
      usages: ["client"],
      dns: [],
      ips: [],
    },
    { name: "scheduler", file: "scheduler", issuer: "ca", commonName: "system:kube-scheduler", usages: ["client"], dns: [], ips: [] },
    {
      name: "kubeProxy",
      file: "kube-proxy",
      issuer: "ca",
      commonName: "system:kube-proxy",
      organization: "system:node-proxier",
      usages: ["client"],
      dns: [],
      ips: [],
    },
    {
      name: "admin",
      file: "admin",
      issuer: "ca",
      commonName: "rootless-k8s-admin",
      organization: "system:masters",
      usages: ["client"],
      dns: [],
      ips: [],
    },
    // The API server proxying to an aggregated API: extension servers trust it via the requestheader CA.
    {
      name: "frontProxyClient",
      file: "front-proxy-client",
      issuer: "frontProxyCa",
      commonName: FRONT_PROXY_CLIENT,
      usages: ["client"],
      dns: [],
      ips: [],
    },
    // The port publisher: its own user, bound to a ClusterRole of its own (cli/render/ports.ts).
    ...(plan.publish?.enabled
      ? [
          {
            name: "ports" as const,
            file: "ports",
            issuer: "ca" as const,
            commonName: PORTS_USER,
            usages: ["client" as const],
            dns: [],
            ips: [],
          },
        ]
      : []),
    // The kubelet serving-certificate approver: its own user, bound to a ClusterRole of its own (cli/render/approver-rbac.ts).
    ...(plan.units.csrApprover
      ? [
          {
            name: "csrApprover" as const,
            file: "csr-approver",
            issuer: "ca" as const,
            commonName: APPROVER_USER,
            usages: ["client" as const],
            dns: [],
            ips: [],
          },
        ]
      : []),
  ];
}

/** Absolute paths of every PKI file, by entry: what renderNode writes and readPki reads back. */
export function pkiPaths(plan: Plan): {
  cas: Record<CaName, KeyPairPaths>;
  certs: Record<CertName, KeyPairPaths>;
  serviceAccount: { publicKey: string; privateKey: string };
} {
  const at = (f: string) => path.join(plan.paths.pkiDir, f);
  const pair = (f: string): KeyPairPaths => ({ cert: at(`${f}.crt`), key: at(`${f}.key`) });
  const certs = Object.fromEntries(certSpecs(plan).map((s) => [s.name, pair(s.file)])) as Record<CertName, KeyPairPaths>;
  return {
    cas: Object.fromEntries(CA_NAMES.map((n) => [n, pair(CA_FILES[n])])) as Record<CaName, KeyPairPaths>,
    certs,
    serviceAccount: { publicKey: at(SERVICE_ACCOUNT_FILES.publicKey), privateKey: at(SERVICE_ACCOUNT_FILES.privateKey) },
  };
}

export interface KeyPairPaths {
  cert: string;
  key: string;
}

/** Reads back the PKI files a previous install wrote (whatever of them exists). */
export async function readPki(plan: Plan, read: (file: string) => Promise<string | null>): Promise<Partial<Pki>> {
  const paths = pkiPaths(plan);
  const out: Partial<Pki> = {};
  const pairs = [...Object.entries(paths.cas), ...Object.entries(paths.certs)] as [CaName | CertName, KeyPairPaths][];
  await Promise.all(
    pairs.map(async ([name, p]) => {
      const [cert, key] = await Promise.all([read(p.cert), read(p.key)]);
      if (cert && key) out[name] = { cert, key };
    }),
  );
  const [publicKey, privateKey] = await Promise.all([read(paths.serviceAccount.publicKey), read(paths.serviceAccount.privateKey)]);
  if (publicKey && privateKey) out.serviceAccount = { publicKey, privateKey };
  return out;
}

export interface GenerateOptions {
  /** What a previous install left: reused where it still fits the plan. */
  existing?: Partial<Pki>;
  /** The time certificates start from (tests); default now. */
  now?: Date;
}

/** A PKI for the plan: new where needed, the existing keys and certificates where they still fit. */
export async function generatePki(plan: Plan, opts: GenerateOptions = {}): Promise<Pki> {
  const now = opts.now ?? new Date();
  const algorithm = plan.pki.algorithm;
  const existing = opts.existing ?? {};
  const cas = {} as Record<CaName, Issuer>;
  const renewed = new Set<CaName>();
  for (const name of CA_NAMES) {
    const reuse = await reusableCa(existing[name], algorithm, now);
    if (reuse) cas[name] = reuse;
    else {
      cas[name] = await createCa(CA_SUBJECTS[name], algorithm, now);
      renewed.add(name);
    }
  }
  const pki = { algorithm } as Pki;
  for (const name of CA_NAMES) pki[name] = cas[name].pem;
  for (const spec of certSpecs(plan)) {
    const old = existing[spec.name];
    const keep = !renewed.has(spec.issuer) && old && (await leafFits(old, spec, cas[spec.issuer], algorithm, now));
    pki[spec.name] = keep ? old : await createLeaf(spec, cas[spec.issuer], algorithm, now);
  }
  const sa = existing.serviceAccount;
  pki.serviceAccount = sa && (await keyMatches(sa.privateKey, algorithm)) ? sa : await createServiceAccountKey(algorithm);
  return pki;
}

interface Issuer {
  pem: KeyPairPem;
  cert: x509.X509Certificate;
  key: CryptoKey;
}

function keyAlgorithm(algorithm: PkiAlgorithm): webcrypto.RsaHashedKeyGenParams | webcrypto.EcKeyGenParams {
  return algorithm === "rsa-2048"
    ? { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }
    : { name: "ECDSA", namedCurve: "P-256" };
}

function signingAlgorithm(algorithm: PkiAlgorithm): SigningAlgorithm {
  return algorithm === "rsa-2048"
    ? ({ name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } as webcrypto.Algorithm)
    : { name: "ECDSA", hash: "SHA-256" };
}

function importAlgorithm(algorithm: PkiAlgorithm): webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams {
  return algorithm === "rsa-2048" ? { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } : { name: "ECDSA", namedCurve: "P-256" };
}

async function newKeys(algorithm: PkiAlgorithm): Promise<CryptoKeyPair> {
  return (await subtle.generateKey(keyAlgorithm(algorithm), true, ["sign", "verify"])) as CryptoKeyPair;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await subtle.exportKey("pkcs8", key), "PRIVATE KEY") + "\n";
}

async function importPrivateKey(pem: string, algorithm: PkiAlgorithm): Promise<CryptoKey | null> {
  try {
    const der = x509.PemConverter.decode(pem)[0];
    if (!der) return null;
    return await subtle.importKey("pkcs8", der, importAlgorithm(algorithm), true, ["sign"]);
  } catch {
    return null;
  }
}

function serial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0]! & 0x7f) | 0x01; // positive and non-zero, as RFC 5280 asks
  return Buffer.from(bytes).toString("hex");
}

function name(commonName: string, organization?: string): x509.JsonName {
  return organization ? [{ O: [organization] }, { CN: [commonName] }] : [{ CN: [commonName] }];
}

function validity(now: Date, days: number): { notBefore: Date; notAfter: Date } {
  // Start a little in the past so a node whose clock lags by minutes still accepts the certificates.
  return { notBefore: new Date(now.getTime() - 5 * 60_000), notAfter: new Date(now.getTime() + days * DAY_MS) };
}

async function createCa(commonName: string, algorithm: PkiAlgorithm, now: Date): Promise<Issuer> {
  const keys = await newKeys(algorithm);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: name(commonName),
    ...validity(now, CA_DAYS),
    signingAlgorithm: signingAlgorithm(algorithm),
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { pem: { cert: cert.toString("pem") + "\n", key: await privateKeyPem(keys.privateKey) }, cert, key: keys.privateKey };
}

async function createLeaf(spec: CertSpec, ca: Issuer, algorithm: PkiAlgorithm, now: Date): Promise<KeyPairPem> {
  const keys = await newKeys(algorithm);
  const usage =
    algorithm === "rsa-2048"
      ? x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment
      : x509.KeyUsageFlags.digitalSignature;
  const ekus = spec.usages.map((u) => (u === "server" ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth));
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(usage, true),
    new x509.ExtendedKeyUsageExtension(ekus, false),
    await x509.AuthorityKeyIdentifierExtension.create(ca.cert.publicKey),
  ];
  const sans = [
    ...spec.dns.map((value) => ({ type: "dns" as const, value })),
    ...spec.ips.map((value) => ({ type: "ip" as const, value })),
  ];
  if (sans.length) extensions.push(new x509.SubjectAlternativeNameExtension(sans, false));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: name(spec.commonName, spec.organization),
    issuer: ca.cert.subjectName,
    ...validity(now, LEAF_DAYS),
    signingAlgorithm: signingAlgorithm(algorithm),
    publicKey: keys.publicKey,
    signingKey: ca.key,
    extensions,
  });
  return { cert: cert.toString("pem") + "\n", key: await privateKeyPem(keys.privateKey) };
}

async function createServiceAccountKey(algorithm: PkiAlgorithm): Promise<Pki["serviceAccount"]> {
  const keys = await newKeys(algorithm);
  const publicKey = x509.PemConverter.encode(await subtle.exportKey("spki", keys.publicKey), "PUBLIC KEY") + "\n";
  return { publicKey, privateKey: await privateKeyPem(keys.privateKey) };
}

function parseCert(pem: string): x509.X509Certificate | null {
  try {
    return new x509.X509Certificate(pem);
  } catch {
    return null;
  }
}

function certAlgorithm(cert: x509.X509Certificate): PkiAlgorithm | null {
  const alg = cert.publicKey.algorithm as unknown as webcrypto.EcKeyAlgorithm & webcrypto.RsaHashedKeyAlgorithm;
  if (alg.name === "ECDSA" && alg.namedCurve === "P-256") return "ecdsa-p256";
  if (alg.name.startsWith("RSA") && alg.modulusLength === 2048) return "rsa-2048";
  return null;
}

async function keyMatches(privateKeyPemText: string, algorithm: PkiAlgorithm): Promise<boolean> {
  return (await importPrivateKey(privateKeyPemText, algorithm)) !== null;
}

async function reusableCa(pem: KeyPairPem | undefined, algorithm: PkiAlgorithm, now: Date): Promise<Issuer | null> {
  if (!pem) return null;
  const cert = parseCert(pem.cert);
  if (!cert || certAlgorithm(cert) !== algorithm) return null;
  if (cert.notAfter.getTime() - now.getTime() < LEAF_DAYS * DAY_MS) return null; // would outlive no leaf
  const key = await importPrivateKey(pem.key, algorithm);
  if (!key || !(await sameKey(cert, key, algorithm))) return null;
  return { pem, cert, key };
}

/** The private key belongs to the certificate: sign with one, verify with the other. */
async function sameKey(cert: x509.X509Certificate, key: CryptoKey, algorithm: PkiAlgorithm): Promise<boolean> {
  const data = new TextEncoder().encode("rootless-k8s key check");
  const sig = await subtle.sign(signingAlgorithm(algorithm), key, data);
  const pub = await cert.publicKey.export(importAlgorithm(algorithm), ["verify"]);
  return subtle.verify(signingAlgorithm(algorithm), pub, sig, data);
}

async function leafFits(pem: KeyPairPem, spec: CertSpec, ca: Issuer, algorithm: PkiAlgorithm, now: Date): Promise<boolean> {
  const cert = parseCert(pem.cert);
  if (!cert || certAlgorithm(cert) !== algorithm) return false;
  if (cert.notAfter.getTime() - now.getTime() < RENEW_BEFORE_DAYS * DAY_MS) return false;
  if (!(await cert.verify({ publicKey: ca.cert.publicKey, signatureOnly: true }))) return false;
  if (cert.subjectName.getField("CN")[0] !== spec.commonName) return false;
  if ((cert.subjectName.getField("O")[0] ?? undefined) !== spec.organization) return false;
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const names = san?.names.toJSON() ?? [];
  const has = (type: string, value: string) => names.some((n) => n.type === type && n.value === value);
  if (!spec.dns.every((d) => has("dns", d)) || !spec.ips.every((i) => has("ip", i))) return false;
  const key = await importPrivateKey(pem.key, algorithm);
  return key !== null && (await sameKey(cert, key, algorithm));
}
