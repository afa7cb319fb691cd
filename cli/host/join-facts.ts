// What `doctor --join` judges (cli/doctor/checks/join.ts), read from the control plane a host
// means to join, in kubeadm's order of trust (its token discovery): first without trusting the
// server, the certificates it presents and cluster-info read as anonymous; the token is sent
// only after the CA in cluster-info matches the pin and cluster-info carries the token's valid
// signature, and then only over TLS checked against that CA. Changes nothing anywhere.
import * as https from "node:https";
import { isIP } from "node:net";
import * as tls from "node:tls";
import { apiMessage } from "./parse/api-status";
import { messageOf } from "../errors";
import { CLUSTER_INFO, type BootstrapToken, trustedCa } from "./parse/bootstrap-token";
import { CLUSTER_PARAMETERS, type ClusterParameters, parseClusterParameters } from "./parse/cluster-parameters";
import { type Host, localHost } from "./host";
import { type OverlayHostFacts, overlayHostFacts } from "./probes/overlay";

export interface JoinFacts {
  /** As given on the join line. */
  server: string;
  caHash: string;
  token: BootstrapToken;
  /** The name this host's node would have. */
  nodeName: string;
  /** What the pod network across hosts needs of this host (read from its own files). */
  overlay: OverlayHostFacts;
  /** cluster-info's CA once it matched the pin and the token's signature held (PEM); null otherwise. */
  caPem: string | null;
  /** A TLS handshake without trusting the server: the certificates it presents (PEM, leaf first), or why it failed. */
  reach: { chain: string[]; error: null } | { chain: null; error: string };
  /** kube-public/cluster-info read as anonymous over that connection; null when the server was not reached. */
  clusterInfo: { status: number; message: string; kubeconfig: string | null; signature: string | null } | null;
  /** Asked only once the pin and the signature hold, over TLS checked against cluster-info's CA: null when not asked. */
  trusted: {
    /** The TLS check itself (the CA signed the server's certificate, which names the host); null when it held. */
    tlsError: string | null;
    /** POST selfsubjectreviews with the token: who the API server takes it for. */
    auth: { status: number; user: string | null; groups: string[]; message: string } | null;
    /** GET the node by this host's name with the token: 404 free, 200 taken, 403 not allowed to look. */
    node: { status: number; message: string } | null;
    /** GET the control plane's cluster parameters with the token: its networks, DNS and version. */
    cluster: { status: number; message: string; parameters: ClusterParameters | null } | null;
  } | null;
}

interface Answer {
  status: number;
  body: string;
}

function request(url: URL, opts: https.RequestOptions, body?: string, timeoutMs = 10_000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { ...opts, timeout: timeoutMs, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer from ${url.host} within ${timeoutMs / 1000} s`)));
    req.on("error", reject);
    req.end(body);
  });
}

/** The server's certificate chain, leaf first, from a handshake that trusts nothing. */
function presentedChain(url: URL, timeoutMs = 10_000): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const socket = tls.connect({
      host,
      port: Number(url.port || 443),
      rejectUnauthorized: false,
      servername: isIP(host) ? undefined : host,
    });
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no TLS answer from ${url.host} within ${timeoutMs / 1000} s`)));
    socket.once("error", reject);
    socket.once("secureConnect", () => {
      const chain: string[] = [];
      let c: tls.DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
      while (c?.raw && !chain.includes(c.raw.toString("base64"))) {
        chain.push(c.raw.toString("base64"));
        c = c.issuerCertificate;
      }
      socket.end();
      resolve(chain.map((b) => `-----BEGIN CERTIFICATE-----\n${b.match(/.{1,64}/g)!.join("\n")}\n-----END CERTIFICATE-----\n`));
    });
  });
}

export async function joinFacts(
  input: { server: string; caHash: string; token: BootstrapToken; nodeName: string },
  host: Host = localHost(),
): Promise<JoinFacts> {
  const url = new URL(input.server);
  const facts: JoinFacts = {
    ...input,
    overlay: await overlayHostFacts(host),
    reach: { chain: null, error: "not tried" },
    clusterInfo: null,
    trusted: null,
    caPem: null,
  };
  try {
    facts.reach = { chain: await presentedChain(url), error: null };
  } catch (e) {
    facts.reach = { chain: null, error: messageOf(e) };
    return facts;
  }
  const infoPath = new URL(`/api/v1/namespaces/${CLUSTER_INFO.namespace}/configmaps/${CLUSTER_INFO.name}`, url);
  try {
    const r = await request(infoPath, { rejectUnauthorized: false, headers: { accept: "application/json" } });
    const data = r.status === 200 ? ((JSON.parse(r.body) as { data?: Record<string, string> }).data ?? {}) : {};
    facts.clusterInfo = {
      status: r.status,
      message: r.status === 200 ? "" : apiMessage(r.body),
      kubeconfig: data[CLUSTER_INFO.kubeconfigKey] ?? null,
      signature: data[`${CLUSTER_INFO.jwsPrefix}${input.token.id}`] ?? null,
    };
  } catch (e) {
    facts.clusterInfo = { status: 0, message: messageOf(e), kubeconfig: null, signature: null };
  }
  const caPem = trustedCa(facts.clusterInfo.kubeconfig, facts.clusterInfo.signature, input.caHash, input.token);
  if (caPem === null) return facts;

  // Trusted from here on: the CA is the pinned one, and the server knows the token's secret.
  facts.caPem = caPem;
  const trusted: NonNullable<JoinFacts["trusted"]> = { tlsError: null, auth: null, node: null, cluster: null };
  facts.trusted = trusted;
  const opts = (method: string, extra: Record<string, string> = {}): https.RequestOptions => ({
    method,
    ca: caPem,
    headers: { accept: "application/json", authorization: `Bearer ${input.token.id}.${input.token.secret}`, ...extra },
  });
  try {
    const review = JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" });
    const r = await request(
      new URL("/apis/authentication.k8s.io/v1/selfsubjectreviews", url),
      opts("POST", { "content-type": "application/json" }),
      review,
    );
    const who =
      r.status === 201
        ? (JSON.parse(r.body) as { status?: { userInfo?: { username?: string; groups?: string[] } } }).status?.userInfo
        : undefined;
    trusted.auth = {
      status: r.status,
      user: who?.username ?? null,
      groups: who?.groups ?? [],
      message: r.status === 201 ? "" : apiMessage(r.body),
    };
  } catch (e) {
    trusted.tlsError = messageOf(e);
    return facts;
  }
  try {
    const r = await request(new URL(`/api/v1/nodes/${encodeURIComponent(input.nodeName)}`, url), opts("GET"));
    trusted.node = { status: r.status, message: r.status === 200 ? "" : apiMessage(r.body) };
  } catch (e) {
    trusted.node = { status: 0, message: messageOf(e) };
  }
  const params = `/api/v1/namespaces/${CLUSTER_PARAMETERS.namespace}/configmaps/${CLUSTER_PARAMETERS.name}`;
  try {
    const r = await request(new URL(params, url), opts("GET"));
    const text = r.status === 200 ? (JSON.parse(r.body) as { data?: Record<string, string> }).data?.[CLUSTER_PARAMETERS.key] : undefined;
    trusted.cluster = {
      status: r.status,
      message: r.status === 200 ? "" : apiMessage(r.body),
      parameters: text ? parseClusterParameters(text) : null,
    };
  } catch (e) {
    trusted.cluster = { status: 0, message: messageOf(e), parameters: null };
  }
  return facts;
}
