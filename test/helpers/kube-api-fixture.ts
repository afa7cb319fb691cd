// TEST FIXTURE, not the product: a loopback HTTPS server (mutual TLS, tls-fixture.ts) that speaks the
// small part of the Kubernetes API the port publisher, the overlay agent and the NetworkPolicy
// enforcer use, with real-shaped JSON (v1 ServiceList, PodList, NodeList and NamespaceList, and
// networking.k8s.io/v1 NetworkPolicyList, with metadata.resourceVersion, watch streams of
// {"type","object"} lines, BOOKMARK and ERROR 410 Status events, created Events, merge patches of a
// Service's status, of a Node and of a Node's status, with a resourceVersion precondition). Objects live in memory;
// every change gets the next resourceVersion, as etcd's revision would. Tests drive it directly:
// put/remove objects, expire watches (410 Gone) or cut their connections.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { listenMutualTls, type TlsFixture } from "./tls-fixture";

type Obj = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    namespace?: string;
    name: string;
    uid?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
} & Record<string, any>;
type Resource = "services" | "pods" | "nodes" | "namespaces" | "networkpolicies";
interface Change {
  rv: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  resource: Resource;
  object: Obj;
}

export interface KubeApiFixture {
  url: string;
  /** Every request: method, path with query, the client certificate's CN. */
  requests: { method: string; url: string; cn: string }[];
  /** Events POSTed to /api/v1/namespaces/NS/events. */
  events: Obj[];
  put(resource: Resource, o: Obj): Obj;
  remove(resource: Resource, namespace: string, name: string): void;
  get(resource: Resource, namespace: string, name: string): Obj | undefined;
  /** Ends every open watch with an ERROR 410 (its resourceVersion is too old), as after etcd's compaction. */
  expireWatches(): void;
  /** Cuts the connection of every open watch (no end of stream). */
  dropWatches(): void;
  /** Answers the next `n` requests with 403, as before the RBAC is applied. */
  refuse(n: number): void;
  openWatches(): number;
  close(): Promise<void>;
}

let uid = 0;

export async function kubeApiFixture(tls: TlsFixture): Promise<KubeApiFixture> {
  let rv = 100;
  const store: Record<Resource, Map<string, Obj>> = {
    services: new Map(),
    pods: new Map(),
    nodes: new Map(),
    namespaces: new Map(),
    networkpolicies: new Map(),
  };
  const changes: Change[] = [];
  const watches = new Set<{ resource: Resource; res: ServerResponse; filter: (o: Obj) => boolean }>();
  const requests: KubeApiFixture["requests"] = [];
  const events: Obj[] = [];
  let refusals = 0;
  const key = (ns: string, name: string) => `${ns}/${name}`;
  const kindOf = (r: Resource) =>
    ({ services: "Service", pods: "Pod", nodes: "Node", namespaces: "Namespace", networkpolicies: "NetworkPolicy" })[r];
  const apiVersionOf = (r: Resource) => (r === "networkpolicies" ? "networking.k8s.io/v1" : "v1");

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  };
  const status = (code: number, reason: string, message: string) => ({
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    message,
    reason,
    code,
  });

  const record = (resource: Resource, type: Change["type"], object: Obj) => {
    const c: Change = { rv, type, resource, object: structuredClone(object) };
    changes.push(c);
    for (const w of watches)
      if (w.resource === resource && w.filter(object)) w.res.write(`${JSON.stringify({ type, object: c.object })}\n`);
  };

  const put = (resource: Resource, o: Obj): Obj => {
    const ns = o.metadata.namespace ?? "default";
    const k = key(ns, o.metadata.name);
    const old = store[resource].get(k);
    const obj: Obj = {
      apiVersion: apiVersionOf(resource),
      kind: kindOf(resource),
      ...structuredClone(o),
      metadata: { ...o.metadata, namespace: ns, uid: old?.metadata.uid ?? `uid-${++uid}`, resourceVersion: String(++rv) },
    };
    store[resource].set(k, obj);
    record(resource, old ? "MODIFIED" : "ADDED", obj);
    return obj;
  };

  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let t = "";
      req.setEncoding("utf8");
      req.on("data", (d: string) => (t += d));
      req.on("end", () => resolve(t));
    });

  const mergePatch = (target: any, patch: any): any => {
    if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
    const out = target && typeof target === "object" && !Array.isArray(target) ? { ...target } : {};
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete out[k];
      else out[k] = mergePatch(out[k], v);
    }
    return out;
  };

  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const cn = String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? "");
    requests.push({ method: req.method ?? "", url: req.url ?? "", cn });
    if (refusals > 0) {
      refusals--;
      return send(res, 403, status(403, "Forbidden", `User "${cn}" cannot do this (fixture)`));
    }
    const u = new URL(req.url ?? "/", "https://fixture");
    const list = /^\/api\/v1\/(services|pods|nodes|namespaces)$|^\/apis\/networking\.k8s\.io\/v1\/(networkpolicies)$/.exec(u.pathname);
    if (list && req.method === "GET") {
      const resource = (list[1] ?? list[2]) as Resource;
      const selector = u.searchParams.get("fieldSelector");
      const node = selector?.startsWith("spec.nodeName=") ? selector.slice("spec.nodeName=".length) : null;
      const filter = (o: Obj) => node === null || o.spec?.nodeName === node;
      if (u.searchParams.get("watch") === "1") {
        const from = Number(u.searchParams.get("resourceVersion") ?? "0");
        res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
        const oldest = changes[0]?.rv ?? rv;
        if (from < oldest - 1) {
          res.end(
            `${JSON.stringify({ type: "ERROR", object: status(410, "Expired", `too old resource version: ${from} (${oldest})`) })}\n`,
          );
          return;
        }
        for (const c of changes)
          if (c.resource === resource && c.rv > from && filter(c.object))
            res.write(`${JSON.stringify({ type: c.type, object: c.object })}\n`);
        const w = { resource, res, filter };
        watches.add(w);
        res.on("close", () => watches.delete(w));
        return;
      }
      const items = [...store[resource].values()].filter(filter);
      return send(res, 200, {
        kind: `${kindOf(resource)}List`,
        apiVersion: apiVersionOf(resource),
        metadata: { resourceVersion: String(rv) },
        items,
      });
    }
    const ev = /^\/api\/v1\/namespaces\/([^/]+)\/events$/.exec(u.pathname);
    if (ev && req.method === "POST") {
      const e = JSON.parse(await body(req)) as Obj & { metadata: { generateName?: string } };
      const made = { ...e, metadata: { ...e.metadata, name: `${e.metadata.generateName ?? "event."}${events.length}`, namespace: ev[1] } };
      events.push(made);
      return send(res, 201, made);
    }
    const st = /^\/api\/v1\/namespaces\/([^/]+)\/services\/([^/]+)\/status$/.exec(u.pathname);
    if (st && req.method === "PATCH") {
      if (req.headers["content-type"] !== "application/merge-patch+json")
        return send(res, 415, status(415, "UnsupportedMediaType", "fixture: merge patches only"));
      const k = key(decodeURIComponent(st[1]!), decodeURIComponent(st[2]!));
      const cur = store.services.get(k);
      if (!cur) return send(res, 404, status(404, "NotFound", `services "${st[2]}" not found`));
      const patch = JSON.parse(await body(req)) as { status?: unknown };
      const next = { ...cur, status: mergePatch(cur.status, patch.status), metadata: { ...cur.metadata, resourceVersion: String(++rv) } };
      store.services.set(k, next);
      record("services", "MODIFIED", next);
      return send(res, 200, next);
    }
    const node = /^\/api\/v1\/nodes\/([^/]+)$/.exec(u.pathname);
    if (node && req.method === "GET") {
      const cur = store.nodes.get(key("default", decodeURIComponent(node[1]!)));
      return cur ? send(res, 200, cur) : send(res, 404, status(404, "NotFound", `nodes "${node[1]}" not found`));
    }
    // The status subresource: only .status changes; a metadata.resourceVersion in the patch is a
    // precondition (409 Conflict when the object moved on), as the API server treats it.
    const nodeStatus = /^\/api\/v1\/nodes\/([^/]+)\/status$/.exec(u.pathname);
    if (nodeStatus && req.method === "PATCH") {
      if (req.headers["content-type"] !== "application/merge-patch+json")
        return send(res, 415, status(415, "UnsupportedMediaType", "fixture: merge patches only"));
      const k = key("default", decodeURIComponent(nodeStatus[1]!));
      const cur = store.nodes.get(k);
      if (!cur) return send(res, 404, status(404, "NotFound", `nodes "${nodeStatus[1]}" not found`));
      const patch = JSON.parse(await body(req)) as { metadata?: { resourceVersion?: string }; status?: unknown };
      const want = patch.metadata?.resourceVersion;
      if (want !== undefined && want !== cur.metadata.resourceVersion)
        return send(res, 409, status(409, "Conflict", "the object has been modified; please apply your changes to the latest version"));
      const next = { ...cur, status: mergePatch(cur.status, patch.status), metadata: { ...cur.metadata, resourceVersion: String(++rv) } };
      store.nodes.set(k, next);
      record("nodes", "MODIFIED", next);
      return send(res, 200, next);
    }
    if (node && req.method === "PATCH") {
      if (req.headers["content-type"] !== "application/merge-patch+json")
        return send(res, 415, status(415, "UnsupportedMediaType", "fixture: merge patches only"));
      const k = key("default", decodeURIComponent(node[1]!));
      const cur = store.nodes.get(k);
      if (!cur) return send(res, 404, status(404, "NotFound", `nodes "${node[1]}" not found`));
      const merged = mergePatch(cur, JSON.parse(await body(req))) as Obj;
      const next = { ...merged, metadata: { ...merged.metadata, resourceVersion: String(++rv) } };
      store.nodes.set(k, next);
      record("nodes", "MODIFIED", next);
      return send(res, 200, next);
    }
    send(res, 404, status(404, "NotFound", `fixture: no route for ${req.method} ${u.pathname}`));
  };

  const { server, listening: l } = await listenMutualTls(tls, handler, (res, e) => send(res, 500, status(500, "InternalError", e.message)));
  return {
    url: `https://127.0.0.1:${l.port}`,
    requests,
    events,
    put,
    remove(resource, namespace, name) {
      const k = key(namespace, name);
      const cur = store[resource].get(k);
      if (!cur) return;
      store[resource].delete(k);
      record(resource, "DELETED", { ...cur, metadata: { ...cur.metadata, resourceVersion: String(++rv) } });
    },
    get: (resource, namespace, name) => store[resource].get(key(namespace, name)),
    expireWatches() {
      // The history is compacted: a watch from an older resourceVersion must list again.
      changes.splice(0, changes.length);
      for (const w of watches)
        w.res.end(`${JSON.stringify({ type: "ERROR", object: status(410, "Expired", "too old resource version") })}\n`);
    },
    dropWatches() {
      for (const w of watches) w.res.socket?.destroy();
    },
    refuse(n) {
      refusals = n;
    },
    openWatches: () => watches.size,
    async close() {
      for (const w of watches) w.res.socket?.destroy();
      server.closeAllConnections();
      await l.close();
    },
  };
}
