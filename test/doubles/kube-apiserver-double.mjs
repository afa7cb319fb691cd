// TEST DOUBLE of kube-apiserver (this machine cannot obtain the real one). Installed under the name
// `kube-apiserver` only inside the e2e mirror's archives; the product does not know it is a double.
//
// Strict like the real one: every flag must be a real kube-apiserver flag; every file a flag names
// must exist and hold what it should (key pairs match, certs chain to the given CAs, keys 0600).
// Then it does the API server's job as far as the node needs: it stores objects in the real etcd
// (the v3 JSON gateway, over TLS with the etcd client cert), serves /livez, /readyz (which checks
// etcd), /version, discovery and the Node API (GET/LIST as JSON or Table, POST, PUT/PATCH status),
// over TLS with the rendered serving cert, requiring client certs from --client-ca-file, and
// authorizes like Node,RBAC for the identities a node has (admin, nodes, components).
import { createPublicKey } from "node:crypto";
import * as https from "node:https";
import { isIP } from "node:net";
import fields from "./data/k8s-config-fields.json" with { type: "json" };
import {
  checkKeyFile,
  checkPair,
  checkPublicKeyFile,
  die,
  FAULT,
  loadCert,
  log,
  onStop,
  parseFlags,
  readFileOrDie,
  requireFlags,
  VERSION,
} from "./lib/strict.mjs";

const C = "kube-apiserver";

// Real kube-apiserver flags (kubernetes v1.36, `kube-apiserver --help`; reference:
// kubernetes/website content/en/docs/reference/command-line-tools-reference/kube-apiserver.md).
const S = "string",
  B = "bool",
  L = "list",
  I = "int";
const FLAGS = {
  "admission-control-config-file": S,
  "advertise-address": S,
  "allow-privileged": B,
  "anonymous-auth": B,
  "api-audiences": L,
  "apiserver-count": I,
  "audit-log-maxage": I,
  "audit-log-maxbackup": I,
  "audit-log-maxsize": I,
  "audit-log-path": S,
  "audit-policy-file": S,
  "authentication-config": S,
  "authorization-config": S,
  "authorization-mode": L,
  "bind-address": S,
  "cert-dir": S,
  "client-ca-file": S,
  "cors-allowed-origins": L,
  "default-not-ready-toleration-seconds": I,
  "default-unreachable-toleration-seconds": I,
  "delete-collection-workers": I,
  "disable-admission-plugins": L,
  "egress-selector-config-file": S,
  "enable-admission-plugins": L,
  "enable-aggregator-routing": B,
  "enable-bootstrap-token-auth": B,
  "enable-garbage-collector": B,
  "enable-priority-and-fairness": B,
  "encryption-provider-config": S,
  "endpoint-reconciler-type": S,
  "etcd-cafile": S,
  "etcd-certfile": S,
  "etcd-compaction-interval": S,
  "etcd-keyfile": S,
  "etcd-prefix": S,
  "etcd-servers": L,
  "etcd-servers-overrides": L,
  "event-ttl": S,
  "external-hostname": S,
  "feature-gates": L,
  "goaway-chance": S,
  "kubelet-certificate-authority": S,
  "kubelet-client-certificate": S,
  "kubelet-client-key": S,
  "kubelet-preferred-address-types": L,
  "kubelet-timeout": S,
  "livez-grace-period": S,
  "log-flush-frequency": S,
  "logging-format": S,
  "max-mutating-requests-inflight": I,
  "max-requests-inflight": I,
  "min-request-timeout": I,
  "permit-address-sharing": B,
  "permit-port-sharing": B,
  profiling: B,
  "proxy-client-cert-file": S,
  "proxy-client-key-file": S,
  "request-timeout": S,
  "requestheader-allowed-names": L,
  "requestheader-client-ca-file": S,
  "requestheader-extra-headers-prefix": L,
  "requestheader-group-headers": L,
  "requestheader-username-headers": L,
  "runtime-config": L,
  "secure-port": I,
  "service-account-extend-token-expiration": B,
  "service-account-issuer": L,
  "service-account-jwks-uri": S,
  "service-account-key-file": L,
  "service-account-lookup": B,
  "service-account-max-token-expiration": S,
  "service-account-signing-key-file": S,
  "service-cluster-ip-range": S,
  "service-node-port-range": S,
  "shutdown-delay-duration": S,
  "storage-backend": S,
  "storage-media-type": S,
  "tls-cert-file": S,
  "tls-cipher-suites": L,
  "tls-min-version": S,
  "tls-private-key-file": S,
  "tls-sni-cert-key": L,
  v: I,
  vmodule: L,
  "watch-cache": B,
  "watch-cache-sizes": L,
};
const AUTHZ_MODES = ["AlwaysAllow", "AlwaysDeny", "ABAC", "Webhook", "RBAC", "Node"];

const f = parseFlags(C, FLAGS);
// The broken test release (rollback test): flags are read, then it fails the way a bad build would.
if (FAULT === "apiserver-exit")
  die(C, `${VERSION}: panic: runtime error: invalid memory address or nil pointer dereference (deliberately broken test release)`);
requireFlags(C, f, [
  "etcd-servers",
  "service-account-issuer",
  "service-account-key-file",
  "service-account-signing-key-file",
  "tls-cert-file",
  "tls-private-key-file",
  "client-ca-file",
  "service-cluster-ip-range",
]);

for (const g of f["feature-gates"] ?? []) {
  const [name, value] = g.split("=");
  if (!fields.featureGates.includes(name)) die(C, `unrecognized feature gate: ${name}`);
  if (value !== "true" && value !== "false") die(C, `invalid value of ${name}=${value}, err: strconv.ParseBool`);
}
for (const m of f["authorization-mode"] ?? ["AlwaysAllow"])
  if (!AUTHZ_MODES.includes(m)) die(C, `authorization-mode "${m}" is not a valid mode`);
const authz = f["authorization-mode"] ?? ["AlwaysAllow"];
if (f["advertise-address"] && !isIP(f["advertise-address"]))
  die(C, `invalid argument "${f["advertise-address"]}" for "--advertise-address"`);
const bindAddress = f["bind-address"] ?? "0.0.0.0";
if (!isIP(bindAddress)) die(C, `invalid argument "${bindAddress}" for "--bind-address"`);
if (!/^\d+\.\d+\.\d+\.\d+\/\d+$/.test(f["service-cluster-ip-range"]))
  die(C, `service-cluster-ip-range "${f["service-cluster-ip-range"]}" is not an IPv4 CIDR`);

// Files: every one must exist and be what it says.
const clientCa = loadCert(C, f["client-ca-file"], "client-ca-file");
const serving = checkPair(C, f["tls-cert-file"], f["tls-private-key-file"], "serving");
const sans = serving.cert.subjectAltName ?? "";
for (const want of ["IP Address:127.0.0.1", "DNS:localhost"])
  if (!sans.includes(want)) die(C, `serving certificate SANs (${sans}) lack ${want}`);
if (f["advertise-address"] && !sans.includes(`IP Address:${f["advertise-address"]}`))
  die(C, `serving certificate SANs lack the advertise address ${f["advertise-address"]}`);
const saSigning = checkKeyFile(C, f["service-account-signing-key-file"], "service-account-signing-key-file");
const saPublic = f["service-account-key-file"].map((p) => checkPublicKeyFile(C, p, "service-account-key-file"));
const signingPublic = createPublicKey(saSigning).export({ type: "spki", format: "pem" });
if (!saPublic.some((k) => k.export({ type: "spki", format: "pem" }) === signingPublic))
  die(C, "service-account-key-file does not hold the public key of service-account-signing-key-file");
if (f["kubelet-client-certificate"] || f["kubelet-client-key"])
  checkPair(C, f["kubelet-client-certificate"], f["kubelet-client-key"], "kubelet client", clientCa);
if (f["kubelet-certificate-authority"]) loadCert(C, f["kubelet-certificate-authority"], "kubelet-certificate-authority");
if (f["proxy-client-cert-file"]) checkPair(C, f["proxy-client-cert-file"], f["proxy-client-key-file"], "proxy client");
if (f["requestheader-client-ca-file"]) loadCert(C, f["requestheader-client-ca-file"], "requestheader-client-ca-file");
for (const p of [
  "admission-control-config-file",
  "authentication-config",
  "authorization-config",
  "egress-selector-config-file",
  "encryption-provider-config",
  "audit-policy-file",
]) {
  if (f[p]) readFileOrDie(C, f[p], p);
}

// etcd over TLS with the client pair.
const etcdUrl = f["etcd-servers"][0];
let etcdAgent;
if (etcdUrl.startsWith("https://")) {
  requireFlags(C, f, ["etcd-cafile", "etcd-certfile", "etcd-keyfile"]);
  const etcdCa = loadCert(C, f["etcd-cafile"], "etcd-cafile");
  const pair = checkPair(C, f["etcd-certfile"], f["etcd-keyfile"], "etcd client", etcdCa);
  etcdAgent = new https.Agent({
    ca: readFileOrDie(C, f["etcd-cafile"]),
    cert: pair.cert.toString(),
    key: readFileOrDie(C, f["etcd-keyfile"]),
    keepAlive: true,
  });
} else if (!etcdUrl.startsWith("http://")) die(C, `--etcd-servers "${etcdUrl}" is not a URL`);
const etcdPrefix = f["etcd-prefix"] ?? "/registry";
const http = await import("node:http");

function etcd(path, body) {
  return new Promise((resolve, reject) => {
    const u = new URL(path, etcdUrl);
    const data = body ? Buffer.from(JSON.stringify(body)) : undefined;
    const mod = u.protocol === "https:" ? https : http;
    const req = mod.request(
      u,
      { method: body ? "POST" : "GET", agent: etcdAgent, timeout: 5000, headers: data ? { "content-type": "application/json" } : {} },
      (res) => {
        let t = "";
        res.on("data", (d) => (t += d));
        res.on("end", () =>
          res.statusCode === 200 ? resolve(JSON.parse(t || "{}")) : reject(new Error(`etcd ${path}: HTTP ${res.statusCode} ${t.trim()}`)),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error(`etcd ${path}: timeout`)));
    req.on("error", reject);
    req.end(data);
  });
}
const b64 = (s) => Buffer.from(s).toString("base64");
const nodeKey = (name) => `${etcdPrefix}/minions/${name}`;
async function getNode(name) {
  const r = await etcd("/v3/kv/range", { key: b64(nodeKey(name)) });
  const kv = r.kvs?.[0];
  return kv ? JSON.parse(Buffer.from(kv.value, "base64").toString()) : null;
}
async function listNodes() {
  const prefix = `${etcdPrefix}/minions/`;
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const r = await etcd("/v3/kv/range", { key: b64(prefix), range_end: b64(end) });
  return (r.kvs ?? []).map((kv) => JSON.parse(Buffer.from(kv.value, "base64").toString()));
}
let rv = 1;
async function putNode(node) {
  node.metadata.resourceVersion = String(Date.now() * 1000 + (rv++ % 1000));
  await etcd("/v3/kv/put", { key: b64(nodeKey(node.metadata.name)), value: b64(JSON.stringify(node)) });
  return node;
}
async function etcdHealthy() {
  try {
    const r = await etcd("/health");
    return r.health === "true" || r.health === true ? null : `etcd health: ${JSON.stringify(r)}`;
  } catch (e) {
    return e.message;
  }
}

// Authorization for the identities a single node has (Node + RBAC bootstrap policy).
function identity(req) {
  const c = req.socket.getPeerCertificate();
  const subject = c?.subject ?? {};
  const groups = [subject.O].flat().filter(Boolean);
  return { user: String(subject.CN ?? ""), groups };
}
function allowed(who, verb, resource, name) {
  if (authz.includes("AlwaysAllow")) return true;
  if (who.groups.includes("system:masters")) return true;
  if (resource === "nonresource") return true; // system:discovery / system:public-info-viewer
  if (authz.includes("Node") && who.groups.includes("system:nodes") && who.user.startsWith("system:node:")) {
    const own = who.user.slice("system:node:".length);
    if (resource === "nodes") return verb === "get" || verb === "list" || verb === "create" || name === own;
    if (resource === "nodes/status") return name === own;
  }
  if (authz.includes("RBAC") && ["system:kube-controller-manager", "system:kube-scheduler", "system:kube-proxy"].includes(who.user)) {
    return resource === "nodes" && (verb === "get" || verb === "list" || verb === "watch");
  }
  return false;
}

function send(res, code, obj, type = "application/json") {
  const body = typeof obj === "string" ? obj : JSON.stringify(obj);
  res.writeHead(code, { "content-type": typeof obj === "string" ? "text/plain; charset=utf-8" : type });
  res.end(body);
}
const status = (code, reason, message) => ({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code });

function age(ts) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(ts)) / 1000));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}
function nodeTable(nodes) {
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion: String(Date.now()) },
    columnDefinitions: [
      { name: "Name", type: "string", format: "name", description: "Name", priority: 0 },
      { name: "Status", type: "string", format: "", description: "Ready condition", priority: 0 },
      { name: "Roles", type: "string", format: "", description: "Node roles", priority: 0 },
      { name: "Age", type: "string", format: "", description: "Age", priority: 0 },
      { name: "Version", type: "string", format: "", description: "Kubelet version", priority: 0 },
    ],
    rows: nodes.map((n) => {
      const ready = n.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
      const roles =
        Object.keys(n.metadata.labels ?? {})
          .filter((l) => l.startsWith("node-role.kubernetes.io/"))
          .map((l) => l.split("/")[1])
          .join(",") || "<none>";
      return {
        cells: [
          n.metadata.name,
          ready ? "Ready" : "NotReady",
          roles,
          age(n.metadata.creationTimestamp),
          n.status?.nodeInfo?.kubeletVersion ?? "",
        ],
        object: { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: n.metadata },
      };
    }),
  };
}

/** JSON merge patch (RFC 7386): objects merge, null deletes, everything else (lists too) replaces. */
function mergePatch(target, patch) {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out = target && typeof target === "object" && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

async function readBody(req) {
  let t = "";
  for await (const c of req) t += c;
  return t ? JSON.parse(t) : null;
}

const [major, minor] = VERSION.replace(/^v/, "").split(".");

async function handle(req, res) {
  const u = new URL(req.url, "https://x");
  const p = u.pathname;
  const who = identity(req);
  if (p === "/livez" || p === "/healthz") return send(res, 200, "ok");
  if (p === "/readyz") {
    const bad = await etcdHealthy();
    return bad ? send(res, 500, `[-]etcd failed: ${bad}\nreadyz check failed\n`) : send(res, 200, "ok");
  }
  if (p === "/version")
    return send(res, 200, { major, minor, gitVersion: VERSION, platform: `linux/${process.arch === "x64" ? "amd64" : process.arch}` });
  if (p === "/api")
    return send(res, 200, {
      kind: "APIVersions",
      versions: ["v1"],
      serverAddressByClientCIDRs: [
        { clientCIDR: "0.0.0.0/0", serverAddress: `${f["advertise-address"] ?? "127.0.0.1"}:${f["secure-port"] ?? 6443}` },
      ],
    });
  if (p === "/apis") return send(res, 200, { kind: "APIGroupList", apiVersion: "v1", groups: [] });
  if (p === "/api/v1")
    return send(res, 200, {
      kind: "APIResourceList",
      groupVersion: "v1",
      resources: [
        {
          name: "nodes",
          singularName: "node",
          namespaced: false,
          kind: "Node",
          verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
          shortNames: ["no"],
        },
        { name: "nodes/status", singularName: "", namespaced: false, kind: "Node", verbs: ["get", "patch", "update"] },
      ],
    });
  const m = /^\/api\/v1\/nodes(?:\/([^/]+))?(\/status)?$/.exec(p);
  if (!m) return send(res, 404, status(404, "NotFound", `the server could not find the requested resource (${req.method} ${p})`));
  const name = m[1] ? decodeURIComponent(m[1]) : undefined;
  const resource = m[2] ? "nodes/status" : "nodes";
  const verb =
    req.method === "GET"
      ? name
        ? "get"
        : "list"
      : req.method === "POST"
        ? "create"
        : req.method === "DELETE"
          ? "delete"
          : req.method === "PATCH"
            ? "patch"
            : "update";
  if (!allowed(who, verb, resource, name)) {
    return send(
      res,
      403,
      status(
        403,
        "Forbidden",
        `nodes${name ? ` "${name}"` : ""} is forbidden: User "${who.user}" cannot ${verb} resource "${resource}" in API group "" at the cluster scope`,
      ),
    );
  }
  if (verb === "list") {
    const nodes = await listNodes();
    if (String(req.headers.accept ?? "").includes("as=Table"))
      return send(res, 200, nodeTable(nodes), "application/json;as=Table;v=v1;g=meta.k8s.io");
    return send(res, 200, { kind: "NodeList", apiVersion: "v1", metadata: { resourceVersion: String(Date.now()) }, items: nodes });
  }
  if (verb === "get") {
    const n = await getNode(name);
    if (!n) return send(res, 404, status(404, "NotFound", `nodes "${name}" not found`));
    if (String(req.headers.accept ?? "").includes("as=Table"))
      return send(res, 200, nodeTable([n]), "application/json;as=Table;v=v1;g=meta.k8s.io");
    return send(res, 200, n);
  }
  const body = await readBody(req);
  if (verb === "create") {
    if (body?.kind !== "Node" || !body.metadata?.name) return send(res, 400, status(400, "BadRequest", "body is not a Node"));
    if (authz.includes("Node") && who.groups.includes("system:nodes") && body.metadata.name !== who.user.slice("system:node:".length)) {
      return send(res, 403, status(403, "Forbidden", `node "${who.user}" is not allowed to create node "${body.metadata.name}"`));
    }
    if (await getNode(body.metadata.name))
      return send(res, 409, status(409, "AlreadyExists", `nodes "${body.metadata.name}" already exists`));
    body.metadata.creationTimestamp = new Date().toISOString();
    body.metadata.uid = crypto.randomUUID();
    log(C, "I", `node ${body.metadata.name} registered by ${who.user}`);
    return send(res, 201, await putNode(body));
  }
  const cur = await getNode(name);
  if (!cur) return send(res, 404, status(404, "NotFound", `nodes "${name}" not found`));
  if (resource === "nodes/status") {
    cur.status = { ...cur.status, ...body.status };
    return send(res, 200, await putNode(cur));
  }
  if (verb === "delete") {
    await etcd("/v3/kv/deleterange", { key: b64(nodeKey(name)) });
    return send(res, 200, status(200, "", "deleted"));
  }
  if (verb === "patch") {
    const type = String(req.headers["content-type"] ?? "");
    if (!type.startsWith("application/merge-patch+json") && !type.startsWith("application/strategic-merge-patch+json")) {
      return send(
        res,
        415,
        status(
          415,
          "UnsupportedMediaType",
          `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json (got ${type})`,
        ),
      );
    }
    const patched = mergePatch(cur, {
      ...body,
      metadata: body?.metadata ? { ...body.metadata, name: undefined } : undefined,
      status: undefined,
    });
    patched.metadata.name = cur.metadata.name;
    return send(res, 200, await putNode(patched));
  }
  if (body?.kind !== "Node" || body.metadata?.name !== name) return send(res, 400, status(400, "BadRequest", "body is not this Node"));
  return send(
    res,
    200,
    await putNode({
      ...body,
      metadata: { ...body.metadata, uid: cur.metadata.uid, creationTimestamp: cur.metadata.creationTimestamp },
      status: cur.status,
    }),
  );
}

const server = https.createServer(
  {
    key: readFileOrDie(C, f["tls-private-key-file"]),
    cert: readFileOrDie(C, f["tls-cert-file"]),
    ca: readFileOrDie(C, f["client-ca-file"]),
    requestCert: true,
    rejectUnauthorized: true,
  },
  (req, res) => {
    handle(req, res).catch((e) => {
      log(C, "E", `${req.method} ${req.url}: ${e.message}`);
      if (!res.headersSent) send(res, 500, status(500, "InternalError", e.message));
    });
  },
);
server.on("tlsClientError", (e) => log(C, "I", `TLS handshake refused: ${e.message}`));
const port = f["secure-port"] ?? 6443;
server.listen(port, bindAddress, () => {
  log(C, "I", `Serving securely on ${bindAddress}:${port} (${VERSION}, authorization ${authz.join(",")}, etcd ${etcdUrl})`);
  import("./lib/kube.mjs").then((k) => k.notifyReady(C));
});
server.on("error", (e) => die(C, `failed to listen on ${bindAddress}:${port}: ${e.message}`));
onStop(C, () => new Promise((r) => server.close(() => r())));
