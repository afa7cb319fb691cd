// Which kubelet serving-certificate requests to approve (pure). A worker's kubelet runs with
// serverTLSBootstrap: it asks for its serving certificate with a CertificateSigningRequest of signer
// kubernetes.io/kubelet-serving, and kube-controller-manager signs such requests once approved but
// never approves them itself. The control plane's approver (cli/agents/csr-approver.ts) approves
// exactly the legitimate ones, checking everything, as postfinance/kubelet-csr-approver does and
// kubeadm's documentation asks: the signer; the requester is a node, in system:nodes; the subject
// is that node (CN system:node:<name>, O exactly system:nodes); the usages a serving certificate
// needs and no more (Kubernetes' own ValidateKubeletServingCSR: digital signature and server auth,
// key encipherment allowed for RSA keys); only DNS and IP names, at least one; every IP one of the
// Node's InternalIP/ExternalIP addresses and every DNS name the node's name or one of its Hostname
// addresses, so a node can get a certificate for nothing but itself; and a request nobody has
// decided on yet.
//
// A refusal never denies: the request is left pending and the reason logged. A kubelet whose
// request is not approved asks again (a new request after its wait runs out), and a request made a
// moment before the Node's addresses were recorded is approved at the next look; a Denied condition
// would be final for that request and could only hide a mistake of ours.
import { canonicalIp, type ParsedRequest } from "../host/parse/csr";

export const KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving";
export const NODE_USER_PREFIX = "system:node:";
export const NODES_GROUP = "system:nodes";

/** The usages a kubelet asks for: always these two, and key encipherment with an RSA key. */
const REQUIRED_USAGES = ["digital signature", "server auth"] as const;
const ALLOWED_USAGES: readonly string[] = [...REQUIRED_USAGES, "key encipherment"];

export interface CsrCondition {
  type: string;
  status?: string;
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

/** The parts of a certificates.k8s.io/v1 CertificateSigningRequest read here. */
export interface CsrObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; uid?: string; resourceVersion?: string } & Record<string, unknown>;
  spec: {
    /** base64 of the PEM request. */
    request: string;
    signerName: string;
    usages?: string[];
    /** Set by the API server: who created it. */
    username?: string;
    groups?: string[];
    uid?: string;
    expirationSeconds?: number;
  } & Record<string, unknown>;
  status?: { conditions?: CsrCondition[]; certificate?: string } & Record<string, unknown>;
}

export interface NodeAddress {
  type: string;
  address: string;
}

/** The parts of a v1 Node read here. */
export interface NodeObject {
  metadata: { name: string } & Record<string, unknown>;
  status?: { addresses?: NodeAddress[] } & Record<string, unknown>;
}

export type CsrDecision = { approve: true; reason: string } | { approve: false; reason: string };

export type CsrState = "pending" | "approved" | "denied" | "failed";

/** Approved, Denied or Failed (the signer gave up) once such a condition is there; pending until then. */
export function csrState(csr: Pick<CsrObject, "status">): CsrState {
  const has = (type: string) => (csr.status?.conditions ?? []).some((c) => c.type === type && c.status !== "False");
  if (has("Denied")) return "denied";
  if (has("Failed")) return "failed";
  if (has("Approved")) return "approved";
  return "pending";
}

/** A Node's name: a DNS-1123 subdomain (what the API server accepts as one). */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The node a kubelet-serving request is for, from its requester (system:node:<name>); null for
 * another signer or a requester that is not a node, so the caller knows which Node to read.
 */
export function servingCsrNodeName(csr: CsrObject): string | null {
  if (csr.spec.signerName !== KUBELET_SERVING_SIGNER) return null;
  const user = csr.spec.username ?? "";
  if (!user.startsWith(NODE_USER_PREFIX)) return null;
  const name = user.slice(NODE_USER_PREFIX.length);
  return name.length <= 253 && NODE_NAME.test(name) ? name : null;
}

const list = (xs: readonly string[]) => (xs.length ? xs.join(", ") : "none");

/**
 * Whether to approve `csr`, given its request as read (null when it could not be read or its
 * self-signature is wrong) and the Node its requester names (null when there is none). Every
 * refusal is one sentence naming what did not match.
 */
export function decideServingCsr(csr: CsrObject, parsed: ParsedRequest | null, node: NodeObject | null): CsrDecision {
  const refuse = (reason: string): CsrDecision => ({ approve: false, reason });
  const state = csrState(csr);
  if (state !== "pending") return refuse(`it is already ${state}`);

  const signer = csr.spec.signerName;
  if (signer !== KUBELET_SERVING_SIGNER) return refuse(`its signer is ${signer || "not set"}, not ${KUBELET_SERVING_SIGNER}`);

  const user = csr.spec.username ?? "";
  const name = servingCsrNodeName(csr);
  if (name === null) return refuse(`its requester "${user}" is not a node (${NODE_USER_PREFIX}<node name>)`);
  const groups = csr.spec.groups ?? [];
  if (!groups.includes(NODES_GROUP)) return refuse(`its requester ${user} is not in the group ${NODES_GROUP} (groups: ${list(groups)})`);

  if (!parsed) return refuse("its request is not a readable PKCS#10 certificate request with a valid self-signature");
  if (parsed.commonName !== user) return refuse(`its subject's common name "${parsed.commonName}" is not its requester ${user}`);
  if (parsed.organizations.length !== 1 || parsed.organizations[0] !== NODES_GROUP)
    return refuse(`its subject's organizations are [${parsed.organizations.join(", ")}], not exactly [${NODES_GROUP}]`);

  const usages = csr.spec.usages ?? [];
  const extra = usages.filter((u) => !ALLOWED_USAGES.includes(u));
  if (extra.length) return refuse(`it asks for the usages ${list(extra)}, beyond ${ALLOWED_USAGES.join(", ")}`);
  const missing = REQUIRED_USAGES.filter((u) => !usages.includes(u));
  if (missing.length) return refuse(`its usages (${list(usages)}) lack ${missing.join(" and ")}`);

  if (parsed.otherSans.length) return refuse(`it asks for names other than DNS names and IP addresses: ${parsed.otherSans.join(", ")}`);
  if (!parsed.dnsNames.length && !parsed.ipAddresses.length) return refuse("it asks for no DNS name and no IP address");

  if (!node) return refuse(`node ${name} does not exist`);
  if (node.metadata.name !== name) return refuse(`the Node read is ${node.metadata.name}, not ${name}`);
  const addresses = node.status?.addresses ?? [];
  const ips = addresses.filter((a) => a.type === "InternalIP" || a.type === "ExternalIP").map((a) => canonical(a.address));
  const badIps = parsed.ipAddresses.filter((ip) => !ips.includes(ip));
  if (badIps.length)
    return refuse(
      `its IP address${badIps.length > 1 ? "es" : ""} ${badIps.join(", ")} ${badIps.length > 1 ? "are" : "is"} not among node ${name}'s InternalIP and ExternalIP addresses (${list(ips)})`,
    );
  const hostnames = [name, ...addresses.filter((a) => a.type === "Hostname").map((a) => a.address)];
  const badDns = parsed.dnsNames.filter((d) => !hostnames.includes(d));
  if (badDns.length)
    return refuse(
      `its DNS name${badDns.length > 1 ? "s" : ""} ${badDns.join(", ")} ${badDns.length > 1 ? "are" : "is"} neither node ${name}'s name nor one of its Hostname addresses`,
    );

  const names = [...parsed.dnsNames, ...parsed.ipAddresses].join(", ");
  return {
    approve: true,
    reason: `it is node ${name}'s own serving certificate request and every name it asks for (${names}) is that node's`,
  };
}

/** A Node's address as the request's IPs are written (Go's form); the API server stores that form already. */
function canonical(address: string): string {
  return canonicalIp(address) ?? address;
}
