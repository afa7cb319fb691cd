// The port publisher's loop against a real RootlessKit (Debian's, on PATH: slirp4netns, the builtin
// port driver, `sleep infinity` as the child, run by an ordinary test user as the node runs it) and a
// loopback HTTPS server speaking the part of the Kubernetes API it uses, which is a TEST FIXTURE
// serving real-shaped JSON (kube-api-fixture.ts), not a Kubernetes. Checked: a start resyncs
// RootlessKit to exactly the wanted set (a stray port removed, the API port kept), data reaches a
// listener inside the namespace through a published NodePort at the node's address, a deleted
// Service is unpublished, a host port held by another program gets one Event and is
// published once freed, an expired or cut watch is listed again, and a stopped-then-restarted
// publisher restores exactly the set; `status` names the owner of every published port. Skips,
// saying why, where the host lacks the tools.
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LoopTiming, type PortsState, runPortsController } from "../../../cli/agents/ports-controller";
import { apiClient, readKubeconfig } from "../../../cli/clients/kubernetes";
import { rootlessKitClient } from "../../../cli/clients/rootlesskit";
import { publishedView } from "../../../cli/inspect/ports-status";
import type { PortStatus } from "../../../cli/plan/ports";
import type { PortsConfig } from "../../../cli/render/ports";
import { freePort, listen } from "../../helpers/net";
import { waitFor } from "../../helpers/process";
import {
  listenInside,
  readAll,
  type RunningRootlessKit,
  slirpRootlessKitSkipReason,
  startRootlessKit,
  stopGroup,
} from "../../helpers/rootlesskit";
import { testUser } from "../../helpers/user";
import { type KubeApiFixture, kubeApiFixture } from "../../helpers/kube-api-fixture";
import { makeTlsFixture, type TlsFixture } from "../../helpers/tls-fixture";

const NAME = "rk8s-ports";
const CHILD_IP = "10.0.2.100"; // slirp4netns's address for the namespace, the node's address in the plan
const TIMING: LoopTiming = { debounceMs: 100, resyncMs: 1000, retryMs: 200, watchSeconds: 30 };

const reason = slirpRootlessKitSkipReason("ports-loop");

describe.skipIf(reason !== null)("the port publisher's loop, against a real RootlessKit and the fixture API server", () => {
  const user = testUser(NAME, { subIds: "auto" });
  const work = user.newDir("rk8s-ports-");
  const stateDir = join(work, "state");
  const rk = rootlessKitClient(join(stateDir, "api.sock"));
  let tls: TlsFixture;
  let api: KubeApiFixture;
  let rootlesskit: RunningRootlessKit | null = null;
  let inside: ChildProcess | null = null;
  let config: PortsConfig;
  let apiPort = 0;
  let log: string[] = [];
  let loop: { ac: AbortController; done: Promise<void> } | null = null;
  const ports = { nodePort: 0, udpNodePort: 0, lbPort: 0, lbNodePort: 0, hostPort: 0, taken: 0 };

  const start = async () => {
    const ac = new AbortController();
    const client = apiClient(await readKubeconfig(config.kubeconfig));
    const done = runPortsController(
      config,
      { api: client, rootlesskit: rk, unprivilegedPortStart: async () => 1024, log: (l) => log.push(l) },
      ac.signal,
      TIMING,
    );
    loop = { ac, done };
  };
  const stopLoop = async () => {
    if (!loop) return;
    loop.ac.abort(new Error("SIGTERM"));
    await loop.done;
    loop = null;
  };
  const list = () => rk.listPorts();
  const key = (p: PortStatus) => `${p.spec.proto} ${p.spec.parentIP}:${p.spec.parentPort}>${p.spec.childIP ?? ""}:${p.spec.childPort}`;
  const set = async () => (await list()).map(key).sort();
  const state = () => JSON.parse(readFileSync(config.stateFile, "utf8")) as PortsState;
  const wantedSet = (extra: string[] = []) =>
    [
      `tcp 0.0.0.0:${apiPort}>:6443`,
      `tcp 127.0.0.1:${ports.nodePort}>${CHILD_IP}:${ports.nodePort}`,
      `udp 127.0.0.1:${ports.udpNodePort}>${CHILD_IP}:${ports.udpNodePort}`,
      `tcp 127.0.0.1:${ports.lbPort}>${CHILD_IP}:${ports.lbNodePort}`,
      `tcp 127.0.0.1:${ports.lbNodePort}>${CHILD_IP}:${ports.lbNodePort}`,
      `tcp 127.0.0.1:${ports.hostPort}>${CHILD_IP}:${ports.hostPort}`,
      ...extra,
    ].sort();

  beforeAll(async () => {
    rootlesskit = await startRootlessKit(user, stateDir);
    // The node's own port (the API server's, as --publish makes it) and a stray one added by hand.
    apiPort = await freePort();
    await rk.addPort({ proto: "tcp", parentIP: "0.0.0.0", parentPort: apiPort, childPort: 6443 });
    await rk.addPort({ proto: "tcp", parentIP: "127.0.0.1", parentPort: await freePort(), childPort: 1 });
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    ports.udpNodePort = ports.nodePort;

    tls = makeTlsFixture();
    api = await kubeApiFixture(tls);
    config = {
      kubeconfig: tls.kubeconfig(api.url),
      rootlesskitSocket: join(stateDir, "api.sock"),
      bindAddress: "127.0.0.1",
      childIP: CHILD_IP,
      reserved: [apiPort],
      ingressIPs: ["127.0.0.1"],
      stateFile: join(work, "ports-state.json"),
      nodeName: "node1",
    };
    api.put("services", {
      metadata: { namespace: "default", name: "echo" },
      spec: {
        type: "NodePort",
        ports: [
          { name: "tcp", port: 80, nodePort: ports.nodePort },
          { name: "udp", protocol: "UDP", port: 80, nodePort: ports.udpNodePort },
        ],
      },
    });
    api.put("services", {
      metadata: { namespace: "shop", name: "web" },
      spec: { type: "LoadBalancer", ports: [{ port: ports.lbPort, nodePort: ports.lbNodePort }] },
    });
    api.put("services", { metadata: { namespace: "default", name: "internal" }, spec: { type: "ClusterIP", ports: [{ port: 80 }] } });
    api.put("pods", {
      metadata: { namespace: "default", name: "hp" },
      spec: { nodeName: "node1", containers: [{ ports: [{ containerPort: 8080, hostPort: ports.hostPort }] }] },
      status: { phase: "Running" },
    });

    // A listener inside the namespace on the NodePort, as kube-proxy's target would answer.
    inside = await listenInside(user, rootlesskit.childPid, "0.0.0.0", ports.nodePort);
  }, 90_000);

  afterAll(async () => {
    await stopLoop();
    await api?.close();
    await stopGroup(inside);
    await stopGroup(rootlesskit?.process);
  });

  it("resyncs at start to exactly the wanted set: the stray port removed, the API server's kept; state and ingress written", async () => {
    expect((await set()).length).toBe(2);
    await start();
    await waitFor(
      async () => JSON.stringify(await set()) === JSON.stringify(wantedSet()),
      10_000,
      () => `the wanted set (log: ${log.join(" | ")})`,
    );
    await waitFor(
      async () => existsSync(config.stateFile) && state().published.length === 5,
      3000,
      () => "the state file",
    );
    const s = state();
    expect(s.error).toBeNull();
    expect(s.published.map((p) => `${p.protocol}/${p.hostPort} ${p.owner}`).sort()).toEqual(
      [
        `tcp/${ports.nodePort} Service default/echo`,
        `udp/${ports.udpNodePort} Service default/echo`,
        `tcp/${ports.lbPort} Service shop/web`,
        `tcp/${ports.lbNodePort} Service shop/web`,
        `tcp/${ports.hostPort} Pod default/hp`,
      ].sort(),
    );
    // What `status` shows: RootlessKit's own list, an owner for every entry.
    expect(
      publishedView(await list(), s, [apiPort])
        .map((v) => `${v.protocol} ${v.hostIP}:${v.hostPort} ${v.owner}`)
        .sort(),
    ).toEqual(
      [
        `tcp 0.0.0.0:${apiPort} the API server`,
        `tcp 127.0.0.1:${ports.nodePort} Service default/echo`,
        `udp 127.0.0.1:${ports.udpNodePort} Service default/echo`,
        `tcp 127.0.0.1:${ports.hostPort} Pod default/hp`,
        `tcp 127.0.0.1:${ports.lbPort} Service shop/web`,
        `tcp 127.0.0.1:${ports.lbNodePort} Service shop/web`,
      ].sort(),
    );
    await waitFor(
      async () => api.get("services", "shop", "web")?.status?.loadBalancer !== undefined,
      5000,
      () => "the ingress",
    );
    expect(api.get("services", "shop", "web")!.status).toEqual({ loadBalancer: { ingress: [{ ip: "127.0.0.1" }] } });
    expect(api.events).toEqual([]);
  });

  it("carries data from the host to the node's address inside the namespace", async () => {
    expect(await readAll(ports.nodePort)).toBe(`hello from inside to ${CHILD_IP}\n`);
  });

  // The 2 s is a figure for the e2e's report; a test never asserts on time, so this waits
  // (15 s at most) until the set is exactly the rest: the port and its nodePort are removed one by one.
  it("unpublishes a deleted Service, and its host port is free again", async () => {
    api.remove("services", "shop", "web");
    const rest = wantedSet().filter((k) => !k.includes(`:${ports.lbPort}>`) && !k.includes(`:${ports.lbNodePort}>`));
    await waitFor(
      async () => JSON.stringify(await set()) === JSON.stringify(rest),
      15_000,
      () => "the Service's ports gone",
    );
    expect(await set()).toEqual(rest);
    await (await listen(createServer(), { port: ports.lbPort })).close();
  });

  it("writes one Event for a host port another program holds, keeps running, and publishes it once freed", async () => {
    const holder = await listen(createServer(), { port: ports.taken });
    api.put("services", {
      metadata: { namespace: "shop", name: "busy" },
      spec: { type: "NodePort", ports: [{ port: 80, nodePort: ports.taken }] },
    });
    await waitFor(
      async () => api.events.length > 0,
      5000,
      () => `an Event (log: ${log.join(" | ")})`,
    );
    await new Promise((r) => setTimeout(r, 2500)); // two resyncs: tried again, no second Event
    expect(api.events).toHaveLength(1);
    expect(api.events[0]).toMatchObject({
      reason: "PortPublishFailed",
      type: "Warning",
      involvedObject: { kind: "Service", namespace: "shop", name: "busy", uid: api.get("services", "shop", "busy")!.metadata.uid },
      message: expect.stringMatching(
        new RegExp(`^host port tcp/${ports.taken} \\(127\\.0\\.0\\.1\\) not published: .*address already in use$`),
      ),
    });
    expect(state().unpublished).toEqual([expect.objectContaining({ owner: "Service shop/busy", hostPort: ports.taken, kind: "refused" })]);
    await holder.close();
    await waitFor(
      async () => (await set()).some((k) => k.startsWith(`tcp 127.0.0.1:${ports.taken}>`)),
      5000,
      () => "the freed port published",
    );
    await waitFor(
      async () => state().unpublished.length === 0,
      3000,
      () => "the state without the conflict",
    );
  });

  it("lists again after an expired watch (410 Gone) and after a cut connection, and applies what changed meanwhile", async () => {
    const lists = () => api.requests.filter((r) => r.method === "GET" && r.url === "/api/v1/services").length;
    const before = lists();
    api.expireWatches();
    await waitFor(
      async () => lists() > before,
      3000,
      () => "a new list after 410",
    );
    api.dropWatches();
    api.remove("services", "shop", "busy"); // while no watch is open
    await waitFor(
      async () => !(await set()).some((k) => k.includes(`:${ports.taken}>`)),
      3000,
      () => "the change made during the outage",
    );
    expect(lists()).toBeGreaterThan(before + 1);
  });

  it("stops on SIGTERM leaving the ports published; a restart restores exactly the set", async () => {
    const wanted = await set();
    await stopLoop();
    expect(await set()).toEqual(wanted);
    // Meanwhile: one published port removed, one stray added, by hand.
    const current = await list();
    await rk.removePort(current.find((p) => p.spec.parentPort === ports.hostPort)!.id);
    await rk.addPort({ proto: "udp", parentIP: "127.0.0.1", parentPort: await freePort(), childPort: 9 });
    expect(await set()).not.toEqual(wanted);
    log = [];
    await start();
    await waitFor(
      async () => JSON.stringify(await set()) === JSON.stringify(wanted),
      10_000,
      () => `the set restored (log: ${log.join(" | ")})`,
    );
  });
});
