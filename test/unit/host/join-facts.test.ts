// doctor --join's facts and checks against a real HTTPS server on loopback that answers as a
// control plane does (cluster-info for anonymous, SelfSubjectReview and nodes for a bearer token;
// the certificates made by openssl). It records every Authorization header it gets: the token
// must never leave this host before the CA pin and the signature hold.
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runChecks } from "../../../cli/doctor/check";
import { joinChecks } from "../../../cli/doctor/checks/join";
import { caHashOf, detachedSignature } from "../../../cli/host/parse/bootstrap-token";
import { localHost } from "../../../cli/host/host";
import { joinFacts } from "../../../cli/host/join-facts";
import { tempDir } from "../../helpers/temp";
import { clusterInfoKubeconfig } from "../../../cli/render/join";
import { makeLeaf, makeTestCa } from "../../helpers/tls";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const TOKEN = { id: "abcdef", secret: "0123456789abcdef" };
const ca = makeTestCa();
const PIN = caHashOf(ca.caCert);

interface Control {
  signWith: { id: string; secret: string } | null;
  /** The token the authenticator accepts (null: none, as when it expired). */
  accepts: string | null;
  nodes: string[];
  clusterInfo: boolean;
  /** The rootless-k8s-cluster ConfigMap's JSON; null: no such ConfigMap (a control plane of an older release). */
  parameters: string | null;
}

const PARAMETERS = JSON.stringify({
  pods: "10.244.0.0/16",
  services: "10.96.0.0/16",
  firstServiceIP: "10.96.0.1",
  dns: { serviceIP: "10.96.0.10", domain: "cluster.local" },
  kubernetes: "1.36.3",
});

function controlPlane(cert: string, key: string) {
  const control: Control = {
    signWith: TOKEN,
    accepts: `${TOKEN.id}.${TOKEN.secret}`,
    nodes: ["first"],
    clusterInfo: true,
    parameters: PARAMETERS,
  };
  const seen: { path: string; authorization: string | undefined }[] = [];
  const server = https.createServer({ cert, key }, (req, res) => {
    seen.push({ path: req.url ?? "", authorization: req.headers.authorization });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const bearer = req.headers.authorization?.replace(/^Bearer /, "");
    if (req.url === "/api/v1/namespaces/kube-public/configmaps/cluster-info") {
      if (!control.clusterInfo)
        return send(403, { kind: "Status", message: 'configmaps "cluster-info" is forbidden: User "system:anonymous" cannot get' });
      const { port } = server.address() as AddressInfo;
      const kubeconfig = clusterInfoKubeconfig(`https://127.0.0.1:${port}`, ca.caCert);
      const data: Record<string, string> = { kubeconfig };
      if (control.signWith) data[`jws-kubeconfig-${control.signWith.id}`] = detachedSignature(kubeconfig, control.signWith);
      return send(200, { kind: "ConfigMap", data });
    }
    if (bearer === undefined || bearer !== control.accepts) return send(401, { kind: "Status", message: "Unauthorized" });
    if (req.method === "POST" && req.url === "/apis/authentication.k8s.io/v1/selfsubjectreviews")
      return send(201, {
        status: { userInfo: { username: `system:bootstrap:${TOKEN.id}`, groups: ["system:bootstrappers", "system:authenticated"] } },
      });
    if (req.url === "/api/v1/namespaces/kube-system/configmaps/rootless-k8s-cluster")
      return control.parameters === null
        ? send(404, { kind: "Status", message: 'configmaps "rootless-k8s-cluster" not found' })
        : send(200, { kind: "ConfigMap", data: { "cluster.json": control.parameters } });
    const node = /^\/api\/v1\/nodes\/(.+)$/.exec(req.url ?? "")?.[1];
    if (node)
      return control.nodes.includes(node)
        ? send(200, { kind: "Node" })
        : send(404, { kind: "Status", message: `nodes "${node}" not found` });
    send(404, { kind: "Status", message: "not found" });
  });
  return { server, control, seen };
}

const good = controlPlane(ca.cert, ca.key);
// The same CA, a certificate for another name only: the address on the join line is not in it.
makeLeaf(ca.dir, "ca", "other", "/CN=other", "subjectAltName=DNS:other.example\nbasicConstraints=CA:FALSE\n");
const misnamed = controlPlane(readFileSync(join(ca.dir, "other.crt"), "utf8"), readFileSync(join(ca.dir, "other.key"), "utf8"));
let url = "";
let misnamedUrl = "";

beforeAll(async () => {
  for (const s of [good.server, misnamed.server]) await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  url = `https://127.0.0.1:${(good.server.address() as AddressInfo).port}`;
  misnamedUrl = `https://127.0.0.1:${(misnamed.server.address() as AddressInfo).port}`;
});
afterAll(() => {
  good.server.close();
  misnamed.server.close();
});

/**
 * The joining host's own files, under a fixture root: the vxlan module in /sys/module (loaded),
 * br_netfilter's sysctl, rp_filter (Debian's defaults: all 0, default 1... here both as given), and
 * /proc/net/udp in the kernel's format (net/ipv4/udp.c, udp4_format_sock: the header, then one
 * line per socket with the local address as hex IP:port; 2118 is 8472).
 */
function hostFiles(o: { vxlan?: boolean; brNetfilter?: boolean; udpPorts?: number[]; rp?: [string, string]; modules?: string } = {}) {
  const root = tempDir("rk8s-joinhost-");
  const put = (p: string, text: string) => {
    mkdirSync(join(root, p, ".."), { recursive: true });
    writeFileSync(join(root, p), text);
  };
  if (o.vxlan ?? true) mkdirSync(join(root, "sys/module/vxlan"), { recursive: true });
  if (o.modules) put("proc/modules", o.modules);
  if (o.brNetfilter ?? true) put("proc/sys/net/bridge/bridge-nf-call-iptables", "1\n");
  put("proc/sys/net/ipv4/conf/all/rp_filter", `${o.rp?.[0] ?? "0"}\n`);
  put("proc/sys/net/ipv4/conf/default/rp_filter", `${o.rp?.[1] ?? "1"}\n`);
  const header = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n";
  const line = (port: number, i: number) =>
    `  ${i}: 00000000:${port.toString(16).toUpperCase().padStart(4, "0")} 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 2309${i} 2 0000000000000000 0\n`;
  put("proc/net/udp", header + (o.udpPorts ?? [5353]).map(line).join(""));
  return localHost({ root });
}

async function check(over: Partial<{ server: string; caHash: string; token: typeof TOKEN; nodeName: string }> = {}, host = hostFiles()) {
  good.seen.length = 0;
  const facts = await joinFacts({ server: url, caHash: PIN, token: TOKEN, nodeName: "second", ...over }, host);
  const byId = Object.fromEntries(runChecks(joinChecks, facts).map((c) => [c.id, c]));
  return { facts, byId, status: Object.fromEntries(Object.entries(byId).map(([k, v]) => [k, v.status])) };
}
const tokenSent = (seen: { authorization: string | undefined }[]) => seen.some((s) => s.authorization !== undefined);

describe("doctor --join against a loopback control plane", () => {
  it("passes every check with the right line, sending the token only after the pin and the signature hold", async () => {
    const { status, byId } = await check();
    expect(status).toEqual({
      "join-reach": "ok",
      "join-cluster-info": "ok",
      "join-ca-hash": "ok",
      "join-token": "ok",
      "join-server-certificate": "ok",
      "join-node-name": "ok",
      "join-cluster": "ok",
      "join-vxlan": "ok",
      "join-br-netfilter": "ok",
      "join-rp-filter": "ok",
      "join-vxlan-port": "ok",
    });
    expect(byId["join-token"]!.summary).toMatch(/system:bootstrap:abcdef \(system:bootstrappers/);
    expect(byId["join-cluster"]!.summary).toBe("Kubernetes 1.36.3; pods 10.244.0.0/16, services 10.96.0.0/16, DNS 10.96.0.10");
    expect(good.seen[0]).toEqual({ path: "/api/v1/namespaces/kube-public/configmaps/cluster-info", authorization: undefined });
    expect(good.seen.slice(1).map((s) => s.authorization)).toEqual(Array(3).fill("Bearer abcdef.0123456789abcdef"));
  });

  it("a control plane that publishes no cluster parameters (an older release): the join check fails, naming the update", async () => {
    good.control.parameters = null;
    try {
      const { status, byId, facts } = await check();
      expect(status["join-cluster"]).toBe("fail");
      expect(byId["join-cluster"]!.summary).toMatch(/HTTP 404/);
      expect(byId["join-cluster"]!.fix!.user[0]).toMatch(/rootless-k8s install/);
      expect(facts.caPem).toBe(ca.caCert);
      good.control.parameters = '{"pods":"not a cidr"}';
      expect((await check()).status["join-cluster"]).toBe("fail");
    } finally {
      good.control.parameters = PARAMETERS;
    }
  });

  it("a wrong CA hash fails the pin, and the token is never sent", async () => {
    const { status, byId } = await check({ caHash: `sha256:${"0".repeat(64)}` });
    expect(status["join-ca-hash"]).toBe("fail");
    expect(byId["join-ca-hash"]!.summary).toContain(PIN);
    expect(status["join-server-certificate"]).toBe("skip");
    expect(tokenSent(good.seen)).toBe(false);
  });

  it("a wrong secret fails the token on the signature, and is never sent", async () => {
    const { status, byId } = await check({ token: { id: TOKEN.id, secret: "ffffffffffffffff" } });
    expect(status["join-token"]).toBe("fail");
    expect(byId["join-token"]!.summary).toMatch(/does not match the cluster's: the signature does not match the token's secret/);
    expect(byId["join-token"]!.fix!.user.join()).toMatch(/token create/);
    expect(tokenSent(good.seen)).toBe(false);
  });

  it("an unknown or deleted token: no signature for it", async () => {
    const { status, byId } = await check({ token: { id: "zzzzzz", secret: TOKEN.secret } });
    expect(status["join-token"]).toBe("fail");
    expect(byId["join-token"]!.summary).toMatch(/no signature for token zzzzzz: the token is unknown, expired or deleted/);
    expect(tokenSent(good.seen)).toBe(false);
  });

  it("a token the authenticator refuses (expired, not yet cleaned up) fails with the server's words", async () => {
    good.control.accepts = null;
    try {
      const { status, byId } = await check();
      expect(status["join-token"]).toBe("fail");
      expect(byId["join-token"]!.summary).toMatch(/refuses token abcdef \(HTTP 401: Unauthorized\)/);
    } finally {
      good.control.accepts = `${TOKEN.id}.${TOKEN.secret}`;
    }
  });

  it("a taken node name fails, naming --node-name", async () => {
    const { status, byId } = await check({ nodeName: "first" });
    expect(status["join-node-name"]).toBe("fail");
    expect(byId["join-node-name"]!.fix!.user[0]).toMatch(/--node-name/);
  });

  it("cluster-info not readable: says so, and checks nothing after it", async () => {
    good.control.clusterInfo = false;
    try {
      const { status, byId } = await check();
      expect(status["join-cluster-info"]).toBe("fail");
      expect(byId["join-cluster-info"]!.summary).toMatch(/HTTP 403/);
      expect([status["join-ca-hash"], status["join-token"], status["join-node-name"]]).toEqual(["skip", "skip", "skip"]);
    } finally {
      good.control.clusterInfo = true;
    }
  });

  it("a server certificate that does not name the address fails that check; the token went nowhere else", async () => {
    misnamed.seen.length = 0;
    const facts = await joinFacts({ server: misnamedUrl, caHash: PIN, token: TOKEN, nodeName: "second" });
    const out = Object.fromEntries(runChecks(joinChecks, facts).map((c) => [c.id, c]));
    expect(out["join-server-certificate"]!.status).toBe("fail");
    expect(out["join-server-certificate"]!.summary).toMatch(/127\.0\.0\.1/);
    expect(tokenSent(misnamed.seen)).toBe(false);
  });

  it("nothing listening: the reach check fails with the port to open, the rest skip", async () => {
    const closed = https.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const { status, byId } = await check({ server: `https://127.0.0.1:${port}` });
    expect(status["join-reach"]).toBe("fail");
    expect(byId["join-reach"]!.summary).toMatch(/ECONNREFUSED/);
    expect(byId["join-reach"]!.fix!.user[0]).toContain(`TCP port ${port}`);
    expect(Object.values(status).filter((s) => s === "skip")).toHaveLength(6);
  });
});

describe("doctor --join: what the pod network across hosts needs of this host", () => {
  it("the VXLAN port held by another program: fails, naming ss to find it", async () => {
    const { byId, facts } = await check({}, hostFiles({ udpPorts: [5353, 8472] }));
    expect(facts.overlay.boundUdpPorts).toEqual([5353, 8472]);
    expect(byId["join-vxlan-port"]!.status).toBe("fail");
    expect(byId["join-vxlan-port"]!.fix!.user.join(" ")).toContain("ss -ulpn 'sport = :8472'");
  });

  it("no vxlan in the kernel (nothing in /sys/module, no module file): fails with root's fix; br_netfilter missing only warns", async () => {
    const { byId } = await check({}, hostFiles({ vxlan: false, brNetfilter: false }));
    expect(byId["join-vxlan"]!.status).toBe("warn"); // neither /proc/modules nor modules.builtin: cannot tell
    expect(byId["join-vxlan"]!.fix!.root).toEqual(["echo vxlan > /etc/modules-load.d/rootless-k8s-vxlan.conf", "modprobe vxlan"]);
    expect(byId["join-br-netfilter"]!.status).toBe("warn");
    expect(byId["join-br-netfilter"]!.summary).toContain("not needed");
    // With /proc/modules (format: name size refcount users state address) that lists no vxlan: it is missing.
    const listed = await check({}, hostFiles({ vxlan: false, modules: "bridge 311296 1 br_netfilter, Live 0x0000000000000000\n" }));
    expect(listed.byId["join-vxlan"]!.status).toBe("fail");
    expect(listed.byId["join-vxlan"]!.summary).toBe("this kernel has no vxlan module: the pod network across hosts needs its device");
  });

  it("rp_filter strict on the host: compatible, the overlay sets loose filtering on its own device", async () => {
    const { byId } = await check({}, hostFiles({ rp: ["1", "1"] }));
    expect(byId["join-rp-filter"]!.status).toBe("ok");
    expect(byId["join-rp-filter"]!.summary).toMatch(/^the host's all=1 \(strict\), default=1 \(strict\): compatible/);
  });
});
