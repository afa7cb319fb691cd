// Bootstrap tokens and the join's trust in a control plane, as Kubernetes and kubeadm define them
// (k8s.io/cluster-bootstrap: token/api, token/jws; kubeadm's pubkeypin): the token's form, the
// detached JWS the controller-manager's bootstrapsigner puts beside the cluster-info kubeconfig
// (HS256, keyed with the token's secret, `kid` = its id), and the CA pin (sha256 of the CA
// certificate's SubjectPublicKeyInfo). Pure: the joiner's facts (cli/host/join-facts.ts), its
// checks (cli/doctor/checks/join.ts) and `token create` share these.
import { createHash, createHmac, timingSafeEqual, X509Certificate } from "node:crypto";
import YAML from "yaml";

/** `id.secret`: 6 and 16 characters of [a-z0-9] (BootstrapTokenPattern). */
export const TOKEN_PATTERN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
export const TOKEN_ID_PATTERN = /^[a-z0-9]{6}$/;
/** The Secret a token lives in: kube-system/bootstrap-token-<id>, of this type. */
export const TOKEN_SECRET_PREFIX = "bootstrap-token-";
export const TOKEN_SECRET_TYPE = "bootstrap.kubernetes.io/token";
/** kube-public/cluster-info: the kubeconfig a joiner discovers, and one signature per signing token. */
export const CLUSTER_INFO = { namespace: "kube-public", name: "cluster-info", kubeconfigKey: "kubeconfig", jwsPrefix: "jws-kubeconfig-" };
/** The group every rootless-k8s token adds to system:bootstrappers: the join RBAC binds it. */
export const NODE_TOKEN_GROUP = "system:bootstrappers:rootless-k8s:default-node-token";
/** How a CA pin is written: kubeadm's `sha256:<hex>`. */
export const CA_HASH_PATTERN = /^sha256:[0-9a-f]{64}$/;

/** An API server's URL as a join line gives it: https://HOST:PORT, nothing after (a trailing / allowed). */
export function isServerUrl(text: string): boolean {
  return /^https:\/\/[^/\s]+\/?$/.test(text);
}

export interface BootstrapToken {
  id: string;
  secret: string;
}

/** The token in `id.secret` form, or null when it is not one. */
export function parseToken(text: string): BootstrapToken | null {
  const m = TOKEN_PATTERN.exec(text.trim());
  return m ? { id: m[1]!, secret: m[2]! } : null;
}

/** A CA pin as written on a join line, lower-cased; null when it is not `sha256:` and 64 hex digits. */
export function parseCaHash(text: string): string | null {
  const t = text.trim().toLowerCase();
  return CA_HASH_PATTERN.test(t) ? t : null;
}

/** The pin of a certificate (PEM or DER): sha256 of its SubjectPublicKeyInfo, as kubeadm's --discovery-token-ca-cert-hash. */
export function caHashOf(cert: string | Buffer): string {
  const spki = new X509Certificate(cert).publicKey.export({ type: "spki", format: "der" });
  return `sha256:${createHash("sha256").update(spki).digest("hex")}`;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** The detached JWS (header..signature) of `content` with `token`, as the bootstrapsigner computes it. */
export function detachedSignature(content: string, token: BootstrapToken): string {
  // go-jose writes the protected header as {"alg":"HS256","kid":"<id>"}.
  const header = b64url(JSON.stringify({ alg: "HS256", kid: token.id }));
  const mac = createHmac("sha256", token.secret)
    .update(`${header}.${b64url(content)}`)
    .digest();
  return `${header}..${b64url(mac)}`;
}

/**
 * Whether `jws` is a valid detached signature of `content` by `token`: the header names HS256 and
 * the token's id, and the MAC over the header as sent and the content matches. Null when valid,
 * else why not, in a few words.
 */
export function jwsProblem(jws: string, content: string, token: BootstrapToken): string | null {
  const parts = jws.split(".");
  if (parts.length !== 3 || parts[1] !== "") return "the signature is not a detached JWS";
  let header: { alg?: unknown; kid?: unknown };
  try {
    header = JSON.parse(Buffer.from(parts[0]!, "base64url").toString("utf8")) as typeof header;
  } catch {
    return "the signature's header is not JSON";
  }
  if (header.alg !== "HS256") return `the signature's algorithm is ${String(header.alg)}, not HS256`;
  if (header.kid !== token.id) return `the signature is for token ${String(header.kid)}, not ${token.id}`;
  const want = createHmac("sha256", token.secret)
    .update(`${parts[0]}.${b64url(content)}`)
    .digest();
  const got = Buffer.from(parts[2]!, "base64url");
  return got.length === want.length && timingSafeEqual(got, want) ? null : "the signature does not match the token's secret";
}

/** The first cluster's server and CA (PEM) of a kubeconfig in YAML or JSON, as cluster-info holds it; null when absent. */
export function clusterOfKubeconfig(text: string): { server: string; caPem: string } | null {
  let doc: { clusters?: { cluster?: { server?: unknown; "certificate-authority-data"?: unknown } }[] } | null;
  try {
    doc = YAML.parse(text) as typeof doc;
  } catch {
    return null;
  }
  const c = doc?.clusters?.[0]?.cluster;
  if (!c || typeof c.server !== "string" || typeof c["certificate-authority-data"] !== "string") return null;
  return { server: c.server, caPem: Buffer.from(c["certificate-authority-data"], "base64").toString("utf8") };
}

/**
 * kubeadm's token discovery in one rule: cluster-info's CA, when its hash is the pin and the
 * kubeconfig carries the token's valid signature (the server knows the secret); else null. Only
 * then may the token itself be sent, and only to a server that CA vouches for.
 */
export function trustedCa(kubeconfig: string | null, signature: string | null, caHash: string, token: BootstrapToken): string | null {
  const cluster = kubeconfig ? clusterOfKubeconfig(kubeconfig) : null;
  if (!cluster || !signature || caHashOrNull(cluster.caPem) !== caHash) return null;
  return jwsProblem(signature, kubeconfig!, token) === null ? cluster.caPem : null;
}

/** caHashOf, or null when the text is no certificate. */
export function caHashOrNull(cert: string): string | null {
  try {
    return caHashOf(cert);
  } catch {
    return null;
  }
}
