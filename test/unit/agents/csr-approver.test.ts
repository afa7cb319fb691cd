// The kubelet serving-certificate approver against real requests and a real HTTPS server: the
// requests are PKCS#10 made in the test (test/helpers/csr.ts), one exactly as a worker's kubelet
// makes it; the server is a TEST FIXTURE on loopback (mutual TLS with the certificates of
// tls-fixture.ts, the approver's client reading them from a kubeconfig as in production) that keeps
// CertificateSigningRequests and Nodes in memory with real-shaped JSON, lists them with a
// resourceVersion, streams watch events, and takes approvals as the API server does (a PUT to the
// approval subresource; only status.conditions is taken; a stale resourceVersion gets 409).
// Checked: one pass approves exactly the legitimate requests with the right body and leaves the
// others pending with their reasons; the loop approves what arrives through the watch, lists again
// when the watch ends or is cut, and stops when its signal aborts.
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approvePending, CSR_PATH, runApprover } from "../../../cli/agents/csr-approver";
import { apiClient, readKubeconfig } from "../../../cli/clients/kubernetes";
import type { CsrObject, NodeObject } from "../../../cli/plan/csr-approval";
import { APPROVER_ROLE, approverRbacObjects } from "../../../cli/render/approver-rbac";
import { csrObject, kubeletRequest, requestPem } from "../../helpers/csr";
import { waitFor } from "../../helpers/process";
import { listenMutualTls, makeTlsFixture, type TlsFixture } from "../../helpers/tls-fixture";

interface CsrApiFixture {
  url: string;
  requests: { method: string; url: string }[];
  /** Every PUT to an approval subresource: the CSR's name, the body, the answer's status. */
  approvals: { name: string; body: any; status: number }[];
  putCsr(o: CsrObject): void;
  putNode(n: NodeObject): void;
  csr(name: string): CsrObject | undefined;
  /** Called before an approval is taken (to change the CSR under the approver's feet). */
  beforeApproval: ((name: string) => void) | null;
  /** Ends every open watch as the server does at its timeoutSeconds. */
  endWatches(): void;
  /** Cuts the connection of every open watch. */
  dropWatches(): void;
  openWatches(): number;
  close(): Promise<void>;
}

async function csrApiFixture(tls: TlsFixture): Promise<CsrApiFixture> {
  let rv = 500;
  const csrs = new Map<string, CsrObject>();
  const nodes = new Map<string, NodeObject>();
  const changes: { rv: number; type: "ADDED" | "MODIFIED"; object: CsrObject }[] = [];
  const watches = new Set<ServerResponse>();
  const f: CsrApiFixture = {
    url: "",
    requests: [],
    approvals: [],
    beforeApproval: null,
    putCsr(o) {
      const old = csrs.get(o.metadata.name);
      const obj = structuredClone({ ...o, metadata: { ...o.metadata, resourceVersion: String(++rv) } });
      csrs.set(o.metadata.name, obj);
      const c = { rv, type: old ? ("MODIFIED" as const) : ("ADDED" as const), object: obj };
      changes.push(c);
      for (const w of watches)
        w.write(
          `${JSON.stringify({ type: c.type, object: { apiVersion: "certificates.k8s.io/v1", kind: "CertificateSigningRequest", ...obj } })}\n`,
        );
    },
    putNode(n) {
      nodes.set(n.metadata.name, structuredClone({ apiVersion: "v1", kind: "Node", ...n }));
    },
    csr: (name) => csrs.get(name),
    endWatches() {
      for (const w of watches) w.end();
    },
    dropWatches() {
      for (const w of watches) w.socket?.destroy();
    },
    openWatches: () => watches.size,
    close: async () => {},
  };
  const send = (res: ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  const failure = (code: number, reason: string, message: string) => ({
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    reason,
    message,
    code,
  });
  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let t = "";
      req.setEncoding("utf8");
      req.on("data", (d: string) => (t += d));
      req.on("end", () => resolve(t));
    });

  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    f.requests.push({ method: req.method ?? "", url: req.url ?? "" });
    const u = new URL(req.url ?? "/", "https://fixture");
    if (u.pathname === CSR_PATH && req.method === "GET") {
      if (u.searchParams.get("watch") === "1") {
        const from = Number(u.searchParams.get("resourceVersion") ?? "0");
        res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
        for (const c of changes) if (c.rv > from) res.write(`${JSON.stringify({ type: c.type, object: c.object })}\n`);
        watches.add(res);
        res.on("close", () => watches.delete(res));
        return;
      }
      // A list's items carry no kind, as the API server writes them.
      return send(res, 200, {
        kind: "CertificateSigningRequestList",
        apiVersion: "certificates.k8s.io/v1",
        metadata: { resourceVersion: String(rv) },
        items: [...csrs.values()],
      });
    }
    const one = /^\/apis\/certificates\.k8s\.io\/v1\/certificatesigningrequests\/([^/]+)(\/approval)?$/.exec(u.pathname);
    if (one) {
      const name = decodeURIComponent(one[1]!);
      const cur = csrs.get(name);
      if (!one[2] && req.method === "GET")
        return cur ? send(res, 200, cur) : send(res, 404, failure(404, "NotFound", `certificatesigningrequests "${name}" not found`));
      if (one[2] && req.method === "PUT") {
        const text = await body(req);
        f.beforeApproval?.(name);
        const now = csrs.get(name);
        let status = 200;
        let answer: unknown;
        const sent = JSON.parse(text);
        if (req.headers["content-type"] !== "application/json") [status, answer] = [415, failure(415, "UnsupportedMediaType", "json only")];
        else if (!now) [status, answer] = [404, failure(404, "NotFound", `certificatesigningrequests "${name}" not found`)];
        else if (sent.metadata?.name !== name)
          [status, answer] = [400, failure(400, "BadRequest", "the name of the object does not match the URL")];
        else if (sent.metadata?.resourceVersion !== now.metadata.resourceVersion)
          [status, answer] = [
            409,
            failure(
              409,
              "Conflict",
              `Operation cannot be fulfilled on certificatesigningrequests.certificates.k8s.io "${name}": the object has been modified`,
            ),
          ];
        else {
          // The approval subresource takes status.conditions and nothing else.
          f.putCsr({ ...now, status: { ...now.status, conditions: sent.status?.conditions ?? [] } });
          answer = csrs.get(name);
        }
        f.approvals.push({ name, body: sent, status });
        return send(res, status, answer);
      }
    }
    const node = /^\/api\/v1\/nodes\/([^/]+)$/.exec(u.pathname);
    if (node && req.method === "GET") {
      const n = nodes.get(decodeURIComponent(node[1]!));
      return n ? send(res, 200, n) : send(res, 404, failure(404, "NotFound", `nodes "${node[1]}" not found`));
    }
    send(res, 404, failure(404, "NotFound", `fixture: no route for ${req.method} ${u.pathname}`));
  };
  const { server, listening: l } = await listenMutualTls(tls, handler, (res, e) =>
    send(res, 500, failure(500, "InternalError", e.message)),
  );
  f.url = `https://127.0.0.1:${l.port}`;
  f.close = async () => {
    for (const w of watches) w.socket?.destroy();
    server.closeAllConnections();
    await l.close();
  };
  return f;
}

const node = (name: string, ips: string[]): NodeObject => ({
  metadata: { name },
  status: { addresses: [...ips.map((address) => ({ type: "InternalIP", address })), { type: "Hostname", address: name }] },
});

let tls: TlsFixture;
beforeAll(() => {
  tls = makeTlsFixture();
});

describe("approvePending: one pass", () => {
  let api: CsrApiFixture;
  const log: string[] = [];
  const NOW = new Date("2026-03-04T05:06:07.890Z");

  beforeAll(async () => {
    api = await csrApiFixture(tls);
    api.putNode(node("w1", ["10.0.0.11"]));
    api.putNode(node("w2", ["10.0.0.12"]));
    // Exactly as w1's kubelet asks: ECDSA P-256, O=system:nodes, CN=system:node:w1, DNS w1 and its IP.
    api.putCsr(csrObject("csr-kubelet-w1", await kubeletRequest("w1", ["10.0.0.11"])));
    // An RSA key: key encipherment as well, as the kubelet asks then.
    api.putCsr(
      csrObject("csr-rsa-w2", await kubeletRequest("w2", ["10.0.0.12"], { rsa: true }), {
        node: "w2",
        usages: ["digital signature", "key encipherment", "server auth"],
      }),
    );
    api.putCsr(csrObject("csr-bad-ip", await kubeletRequest("w1", ["10.0.0.11", "10.9.9.9"])));
    api.putCsr(csrObject("csr-other-cn", await kubeletRequest("w2", ["10.0.0.12"]), { node: "w1" }));
    api.putCsr(csrObject("csr-no-node", await kubeletRequest("ghost", ["10.0.0.66"]), { node: "ghost" }));
    api.putCsr(
      csrObject("csr-client-usage", await kubeletRequest("w1", ["10.0.0.11"]), {
        usages: ["digital signature", "server auth", "client auth"],
      }),
    );
    // The kubelet's client certificate: the controller-manager's own approver deals with it.
    api.putCsr(
      csrObject("csr-client-signer", await requestPem({ cn: ["system:node:w1"] }), {
        signer: "kubernetes.io/kube-apiserver-client-kubelet",
        usages: ["digital signature", "client auth"],
      }),
    );
    api.putCsr(
      csrObject("csr-not-a-node", await kubeletRequest("w1", ["10.0.0.11"]), { username: "alice", groups: ["system:authenticated"] }),
    );
    api.putCsr(
      csrObject("csr-done", await kubeletRequest("w1", ["10.0.0.11"]), {
        conditions: [
          { type: "Approved", status: "True", reason: "KubectlApprove", message: "by hand", lastUpdateTime: "2026-01-01T00:00:00Z" },
        ],
      }),
    );
    // A request whose signature does not match its content (the last byte, the signature's, flipped).
    const good = csrObject("csr-forged", await kubeletRequest("w1", ["10.0.0.11"]));
    const pem = Buffer.from(good.spec.request, "base64").toString();
    const der = Buffer.from(pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
    der[der.length - 1]! ^= 0x01;
    good.spec.request = Buffer.from(
      `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString("base64")}\n-----END CERTIFICATE REQUEST-----\n`,
    ).toString("base64");
    api.putCsr(good);
  });
  afterAll(async () => {
    await api?.close();
  });

  it("approves the kubelet's request and the RSA one, and leaves every other pending request with its reason", async () => {
    const client = apiClient(await readKubeconfig(tls.kubeconfig(api.url)));
    const listedRv = api.csr("csr-kubelet-w1")!.metadata.resourceVersion;
    const pass = await approvePending(client, (l) => log.push(l), { now: () => NOW });
    expect(pass.approved).toEqual(["csr-kubelet-w1", "csr-rsa-w2"]);
    expect(Object.fromEntries(pass.left.map((l) => [l.name, l.reason]))).toEqual({
      "csr-bad-ip": "its IP address 10.9.9.9 is not among node w1's InternalIP and ExternalIP addresses (10.0.0.11)",
      "csr-other-cn": 'its subject\'s common name "system:node:w2" is not its requester system:node:w1',
      "csr-no-node": "node ghost does not exist",
      "csr-client-usage": "it asks for the usages client auth, beyond digital signature, server auth, key encipherment",
      "csr-client-signer": "its signer is kubernetes.io/kube-apiserver-client-kubelet, not kubernetes.io/kubelet-serving",
      "csr-not-a-node": 'its requester "alice" is not a node (system:node:<node name>)',
      "csr-forged": "its request is not a readable PKCS#10 certificate request with a valid self-signature",
    });

    // One PUT per approval, nothing for the others (the already approved one included).
    expect(api.approvals.map((a) => [a.name, a.status])).toEqual([
      ["csr-kubelet-w1", 200],
      ["csr-rsa-w2", 200],
    ]);
    const sent = api.approvals[0]!.body;
    expect(sent).toMatchObject({
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { name: "csr-kubelet-w1", resourceVersion: listedRv },
      spec: { signerName: "kubernetes.io/kubelet-serving", username: "system:node:w1" },
    });
    expect(sent.spec.request).toBe(api.csr("csr-kubelet-w1")!.spec.request);
    expect(sent.status.conditions).toEqual([
      {
        type: "Approved",
        status: "True",
        reason: "RootlessK8sApproved",
        message: "rootless-k8s: it is node w1's own serving certificate request and every name it asks for (w1, 10.0.0.11) is that node's",
        lastUpdateTime: "2026-03-04T05:06:07Z",
      },
    ]);
    expect(api.csr("csr-kubelet-w1")!.status?.conditions?.[0]?.type).toBe("Approved");
    expect(api.csr("csr-bad-ip")!.status?.conditions ?? []).toEqual([]);
    expect(api.csr("csr-done")!.status?.conditions).toHaveLength(1);

    // The Node of a request for another signer or from a non-node is not even read.
    const nodeReads = api.requests.filter((r) => r.url.startsWith("/api/v1/nodes/")).map((r) => r.url);
    expect(new Set(nodeReads)).toEqual(new Set(["/api/v1/nodes/w1", "/api/v1/nodes/w2", "/api/v1/nodes/ghost"]));

    // One line per decision.
    expect(log).toHaveLength(9);
    expect(log).toContain(
      "approved csr-kubelet-w1: it is node w1's own serving certificate request and every name it asks for (w1, 10.0.0.11) is that node's",
    );
    expect(log).toContain("left csr-no-node pending: node ghost does not exist");
  });

  it("does not approve again what is approved now", async () => {
    const client = apiClient(await readKubeconfig(tls.kubeconfig(api.url)));
    const before = api.approvals.length;
    const pass = await approvePending(client, () => {});
    expect(pass.approved).toEqual([]);
    expect(pass.left.map((l) => l.name).sort()).toEqual(
      ["csr-bad-ip", "csr-client-signer", "csr-client-usage", "csr-forged", "csr-no-node", "csr-not-a-node", "csr-other-cn"].sort(),
    );
    expect(api.approvals.length).toBe(before);
  });

  it("reads a request changed meanwhile (409) again and decides on what it is now", async () => {
    const client = apiClient(await readKubeconfig(tls.kubeconfig(api.url)));
    api.putCsr(csrObject("csr-raced", await kubeletRequest("w1", ["10.0.0.11"])));
    let once = true;
    api.beforeApproval = (name) => {
      if (!once) return;
      once = false;
      const cur = api.csr(name)!;
      api.putCsr({ ...cur, metadata: { ...cur.metadata, labels: { touched: "yes" } } });
    };
    try {
      const pass = await approvePending(client, () => {});
      expect(pass.approved).toEqual(["csr-raced"]);
      expect(api.approvals.filter((a) => a.name === "csr-raced").map((a) => a.status)).toEqual([409, 200]);
      expect(api.csr("csr-raced")!.metadata.labels).toEqual({ touched: "yes" });
    } finally {
      api.beforeApproval = null;
    }
  });

  it("fails with a user error when the API server refuses the list", async () => {
    const stranger = apiClient(await readKubeconfig(tls.kubeconfig(api.url, { stranger: true })));
    await expect(approvePending(stranger, () => {})).rejects.toThrow(/could not list CertificateSigningRequests/);
  });
});

describe("runApprover: the loop", () => {
  let api: CsrApiFixture;
  const log: string[] = [];
  let loop: { ac: AbortController; done: Promise<void> } | null = null;
  const approvedNames = () => api.approvals.filter((a) => a.status === 200).map((a) => a.name);
  const lists = () => api.requests.filter((r) => r.method === "GET" && r.url === CSR_PATH).length;

  beforeAll(async () => {
    api = await csrApiFixture(tls);
    api.putNode(node("w1", ["10.0.0.11"]));
    api.putCsr(csrObject("csr-first", await kubeletRequest("w1", ["10.0.0.11"])));
    const client = apiClient(await readKubeconfig(tls.kubeconfig(api.url)));
    const ac = new AbortController();
    loop = {
      ac,
      done: runApprover(client, { signal: ac.signal, log: (l) => log.push(l), timing: { watchSeconds: 30, retryMs: 50, maxRetryMs: 400 } }),
    };
  });
  afterAll(async () => {
    loop?.ac.abort();
    await loop?.done;
    await api?.close();
  });

  it("approves what is pending at its start, then watches", async () => {
    await waitFor(
      () => approvedNames().includes("csr-first") && api.openWatches() === 1,
      10_000,
      () => `the first approval (log: ${log.join(" | ")})`,
    );
    expect(api.requests.some((r) => r.url.startsWith(`${CSR_PATH}?watch=1&`) && r.url.includes("resourceVersion="))).toBe(true);
  });

  it("approves a request that arrives through the watch, and leaves a bad one pending, said once", async () => {
    const listsBefore = lists();
    api.putCsr(csrObject("csr-watched", await kubeletRequest("w1", ["10.0.0.11"])));
    api.putCsr(csrObject("csr-watched-bad", await kubeletRequest("w1", ["192.0.2.1"])));
    await waitFor(
      () => approvedNames().includes("csr-watched"),
      10_000,
      () => `the watched approval (log: ${log.join(" | ")})`,
    );
    await waitFor(() => log.some((l) => l.startsWith("left csr-watched-bad pending")), 10_000, "the refusal");
    expect(lists()).toBe(listsBefore); // through the watch, not a new list
    expect(log.filter((l) => l.startsWith("approved csr-watched:"))).toHaveLength(1);
  });

  it("lists again when the watch ends: a request left for want of its Node is approved once the Node is there", async () => {
    api.putCsr(csrObject("csr-early", await kubeletRequest("w9", ["10.0.0.99"]), { node: "w9" }));
    await waitFor(() => log.includes("left csr-early pending: node w9 does not exist"), 10_000, "the early refusal");
    api.putNode(node("w9", ["10.0.0.99"]));
    const listsBefore = lists();
    api.endWatches(); // the server's timeoutSeconds
    await waitFor(
      () => approvedNames().includes("csr-early"),
      10_000,
      () => `the early approval (log: ${log.join(" | ")})`,
    );
    expect(lists()).toBeGreaterThan(listsBefore);
    // The bad one, seen again at the new list, is not said again.
    expect(log.filter((l) => l.startsWith("left csr-watched-bad pending"))).toHaveLength(1);
  });

  it("lists and watches again after the watch is cut, approving what came meanwhile", async () => {
    await waitFor(() => api.openWatches() === 1, 10_000, "a watch");
    api.dropWatches();
    api.putCsr(csrObject("csr-after-cut", await kubeletRequest("w1", ["10.0.0.11"])));
    await waitFor(
      () => approvedNames().includes("csr-after-cut"),
      10_000,
      () => `the approval after the cut (log: ${log.join(" | ")})`,
    );
    await waitFor(() => api.openWatches() === 1, 10_000, "the watch again");
    expect(log.some((l) => /the watch of CertificateSigningRequests broke/.test(l))).toBe(true);
    // Each request approved exactly once.
    expect(approvedNames().sort()).toEqual(["csr-after-cut", "csr-early", "csr-first", "csr-watched"]);
  });

  it("stops when its signal aborts, closing its watch", async () => {
    const l = loop!;
    l.ac.abort();
    await Promise.race([l.done, new Promise((_, reject) => setTimeout(() => reject(new Error("the loop did not stop")), 5000))]);
    await waitFor(() => api.openWatches() === 0, 5000, "the watch closed");
    loop = null;
    // Nothing more happens after it stopped.
    const seen = api.requests.length;
    api.putCsr(csrObject("csr-too-late", await kubeletRequest("w1", ["10.0.0.11"])));
    await new Promise((r) => setTimeout(r, 300));
    expect(api.requests.length).toBe(seen);
    expect(approvedNames()).not.toContain("csr-too-late");
  });
});

describe("approverRbacObjects: what the approver's identity needs", () => {
  it("is a ClusterRole with read/watch of CSRs, update of their approval, approve on the kubelet-serving signer only, get of Nodes, bound to the user", () => {
    const [role, binding] = approverRbacObjects("someone", { "rootless-k8s.io/join": "true" });
    expect(role).toEqual({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: APPROVER_ROLE, labels: { "rootless-k8s.io/join": "true" } },
      rules: [
        { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests/approval"], verbs: ["update"] },
        {
          apiGroups: ["certificates.k8s.io"],
          resources: ["signers"],
          resourceNames: ["kubernetes.io/kubelet-serving"],
          verbs: ["approve"],
        },
        { apiGroups: [""], resources: ["nodes"], verbs: ["get"] },
      ],
    });
    expect(binding).toMatchObject({
      kind: "ClusterRoleBinding",
      roleRef: { kind: "ClusterRole", name: APPROVER_ROLE },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "someone" }],
    });
  });
});
