// The port publisher's pure parts (Events, LoadBalancer ingress, what is published now), its config
// and sysctl readers, the API client's watch, and the loop when RootlessKit does not answer, against
// a loopback HTTPS server speaking the part of the Kubernetes API the publisher uses: that server is
// a TEST FIXTURE serving real-shaped JSON (kube-api-fixture.ts), not a Kubernetes. The loop against a
// real RootlessKit is in ports-loop.test.ts.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ingressPatch,
  ownerIndex,
  type PortsState,
  portEvent,
  publishedNow,
  readPortsConfig,
  runPortsController,
  type ServiceItem,
  unprivilegedPortStart,
  unpublishedPorts,
} from "../../../cli/agents/ports-controller";
import { apiClient, readKubeconfig, type WatchEvent } from "../../../cli/clients/kubernetes";
import { rootlessKitClient } from "../../../cli/clients/rootlesskit";
import { ExitCode, UserError } from "../../../cli/errors";
import { wantedPorts } from "../../../cli/plan/ports";
import type { PortsConfig } from "../../../cli/render/ports";
import { CLI_BUNDLE, runCli } from "../../helpers/cli";
import { waitFor } from "../../helpers/process";
import { tempDir } from "../../helpers/temp";
import { type KubeApiFixture, kubeApiFixture } from "../../helpers/kube-api-fixture";
import { makeTlsFixture, type TlsFixture } from "../../helpers/tls-fixture";

const lb = (name: string, port: number, nodePort: number, extra: Partial<ServiceItem["spec"]> = {}): ServiceItem => ({
  metadata: { namespace: "shop", name, uid: `uid-${name}` },
  spec: { type: "LoadBalancer", ports: [{ port, nodePort }], ...extra },
});

describe("the publisher's decisions (pure)", () => {
  it("names the owner of every unpublished port, and writes one Warning Event on it that kubectl describe finds", () => {
    const svc = lb("web", 80, 30080);
    const pod = {
      metadata: { namespace: "default", name: "p", uid: "uid-p" },
      spec: { containers: [{ ports: [{ containerPort: 1, hostPort: 8080 }] }] },
    };
    const w = wantedPorts([svc], [pod], { bindAddress: "0.0.0.0", unprivilegedPortStart: 1024, reserved: [6443] });
    const owners = ownerIndex([svc], [pod]);
    const refused = [{ port: w.ports.find((p) => p.hostPort === 8080)!, reason: "listen tcp 0.0.0.0:8080: bind: address already in use" }];
    const un = unpublishedPorts(refused, w.skipped, w.conflicts);
    expect(un).toEqual([
      { protocol: "tcp", hostPort: 8080, owner: "Pod default/p", reason: refused[0]!.reason, kind: "refused" },
      {
        protocol: "tcp",
        hostPort: 80,
        owner: "Service shop/web",
        reason: "host port 80 is below net.ipv4.ip_unprivileged_port_start (1024); as root: sysctl net.ipv4.ip_unprivileged_port_start=80",
        kind: "skipped",
      },
    ]);
    const ev = portEvent(un[0]!, owners.get("Pod default/p")!, "0.0.0.0", "node1", new Date("2026-12-02T10:00:00.123Z"));
    expect(ev).toEqual({
      apiVersion: "v1",
      kind: "Event",
      metadata: { generateName: "p.", namespace: "default" },
      involvedObject: { apiVersion: "v1", kind: "Pod", namespace: "default", name: "p", uid: "uid-p" },
      reason: "PortPublishFailed",
      message: "host port tcp/8080 (0.0.0.0) not published: listen tcp 0.0.0.0:8080: bind: address already in use",
      type: "Warning",
      source: { component: "rootless-k8s-ports", host: "node1" },
      reportingComponent: "rootless-k8s-ports",
      reportingInstance: "node1",
      firstTimestamp: "2026-12-02T10:00:00Z",
      lastTimestamp: "2026-12-02T10:00:00Z",
      count: 1,
    });
    expect(portEvent(un[1]!, owners.get("Service shop/web")!, "0.0.0.0", "node1", new Date()).reason).toBe("PortNotPublished");
  });

  it("sets a LoadBalancer's ingress to the host's addresses once; leaves other types and other implementations alone", () => {
    const ips = ["192.168.1.20"];
    expect(ingressPatch(lb("web", 8080, 30080), ips)).toEqual({ status: { loadBalancer: { ingress: [{ ip: "192.168.1.20" }] } } });
    expect(ingressPatch({ ...lb("web", 8080, 30080), status: { loadBalancer: { ingress: [{ ip: "192.168.1.20" }] } } }, ips)).toBeNull();
    expect(ingressPatch({ ...lb("web", 8080, 30080), status: { loadBalancer: { ingress: [{ ip: "10.0.0.1" }] } } }, ips)).not.toBeNull();
    expect(ingressPatch(lb("metal", 8080, 30080, { loadBalancerClass: "metallb.io/metallb" }), ips)).toBeNull();
    expect(ingressPatch({ metadata: { name: "np" }, spec: { type: "NodePort", ports: [] } }, ips)).toBeNull();
  });

  it("reports as published only what RootlessKit lists, with its id", () => {
    const w = wantedPorts([lb("web", 8080, 30080)], [], {
      bindAddress: "0.0.0.0",
      unprivilegedPortStart: 1024,
      reserved: [],
      childIP: "10.0.2.100",
    });
    const current = [{ id: 7, spec: { proto: "tcp", parentIP: "0.0.0.0", parentPort: 30080, childIP: "10.0.2.100", childPort: 30080 } }];
    expect(publishedNow(w.ports, current)).toEqual([{ ...w.ports.find((p) => p.hostPort === 30080)!, id: 7 }]);
  });
});

describe("start-up", () => {
  const dir = tempDir("rk8s-ports-config-");
  const good: PortsConfig = {
    kubeconfig: "/k",
    rootlesskitSocket: "/s",
    bindAddress: "0.0.0.0",
    childIP: "10.0.2.100",
    reserved: [6443],
    ingressIPs: ["192.168.1.20"],
    stateFile: "/run/state.json",
    nodeName: "n",
  };

  it("reads the rendered config, and refuses a missing, broken or incomplete one (exit 3, fix: install again)", async () => {
    const file = join(dir, "ports.json");
    writeFileSync(file, JSON.stringify(good));
    expect(await readPortsConfig(file)).toEqual(good);
    const refusal = async (content: string | null) => {
      const f = join(dir, `c-${Math.random()}.json`);
      if (content !== null) writeFileSync(f, content);
      const e = await readPortsConfig(f).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(UserError);
      expect((e as UserError).exitCode).toBe(ExitCode.Refused);
      return (e as UserError).message;
    };
    expect(await refusal(null)).toMatch(/cannot read the ports config .*: ENOENT/);
    expect(await refusal("{")).toMatch(/is not JSON/);
    expect(await refusal(JSON.stringify({ ...good, bindAddress: "1.2.3.4", reserved: ["x"], nodeName: "" }))).toMatch(
      /lacks or has a bad nodeName, bindAddress, reserved$/,
    );
  });

  it("reads ip_unprivileged_port_start anew each time; 1024 when it cannot", async () => {
    const f = join(dir, "sysctl");
    writeFileSync(f, "80\n");
    expect(await unprivilegedPortStart(f)).toBe(80);
    writeFileSync(f, "0\n");
    expect(await unprivilegedPortStart(f)).toBe(0);
    expect(await unprivilegedPortStart(join(dir, "none"))).toBe(1024);
  });
});

describe("against the fixture API server (mutual TLS on loopback)", () => {
  let tls: TlsFixture;
  let api: KubeApiFixture;
  beforeAll(async () => {
    tls = makeTlsFixture();
    api = await kubeApiFixture(tls);
  });
  afterAll(async () => api?.close());
  const client = async () => apiClient(await readKubeconfig(tls.kubeconfig(api.url)));
  /** The publisher's config for a node "node1" whose RootlessKit socket and state live in `dir`. */
  const configIn = (dir: string): PortsConfig => ({
    kubeconfig: tls.kubeconfig(api.url),
    rootlesskitSocket: join(dir, "api.sock"),
    bindAddress: "0.0.0.0",
    childIP: "10.0.2.100",
    reserved: [6443],
    ingressIPs: ["192.168.1.20"],
    stateFile: join(dir, "state.json"),
    nodeName: "node1",
  });

  it("the watch gets each event line as it comes, and ends with the server's 410, or rejects when the connection is cut", async () => {
    const c = await client();
    const list = JSON.parse((await c.get("/api/v1/services")).body) as { metadata: { resourceVersion: string } };
    const seen: WatchEvent[] = [];
    const first = c.watch(`/api/v1/services?watch=1&resourceVersion=${list.metadata.resourceVersion}`, (e) => seen.push(e));
    const until = (cond: () => boolean) => waitFor(cond, 2000, cond.toString());
    await until(() => api.openWatches() === 1);
    api.put("services", { metadata: { namespace: "default", name: "a" }, spec: { type: "ClusterIP" } });
    await until(() => seen.length === 1);
    expect(seen[0]).toMatchObject({ type: "ADDED", object: { kind: "Service", metadata: { name: "a" } } });
    api.expireWatches();
    expect((await first).status).toBe(200);
    expect(seen.at(-1)).toMatchObject({ type: "ERROR", object: { code: 410 } });
    await until(() => api.openWatches() === 0);

    const second = c.watch(`/api/v1/services?watch=1&resourceVersion=${seen[0]!.object.metadata!.resourceVersion}`, () => {});
    await until(() => api.openWatches() === 1);
    api.dropWatches();
    await expect(second).rejects.toThrow();
    await until(() => api.openWatches() === 0);

    const ac = new AbortController();
    const third = c.watch("/api/v1/services?watch=1&resourceVersion=999999", () => {}, { signal: ac.signal });
    await until(() => api.openWatches() === 1);
    ac.abort(new Error("stopped by the test"));
    await expect(third).rejects.toThrow("stopped by the test");
    await until(() => api.openWatches() === 0);
    expect(api.openWatches()).toBe(0);
  });

  it("the loop without RootlessKit: no crash, state says why, Events and LoadBalancer ingress still written; SIGTERM ends it", async () => {
    const dir = tempDir("rk8s-ports-norootlesskit-");
    const config = configIn(dir);
    api.put("services", {
      metadata: { namespace: "shop", name: "web" },
      spec: { type: "LoadBalancer", ports: [{ port: 80, nodePort: 30080 }] },
    });
    api.put("pods", {
      metadata: { namespace: "default", name: "elsewhere" },
      spec: { nodeName: "node2", containers: [{ ports: [{ containerPort: 1, hostPort: 9999 }] }] },
    });
    api.refuse(2); // the first lists, before RBAC is applied
    const log: string[] = [];
    const ac = new AbortController();
    const loop = runPortsController(
      config,
      {
        api: await client(),
        rootlesskit: rootlessKitClient(config.rootlesskitSocket),
        unprivilegedPortStart: async () => 1024,
        log: (l) => log.push(l),
      },
      ac.signal,
      { debounceMs: 50, resyncMs: 300, retryMs: 100, watchSeconds: 30 },
    );
    const state = () => {
      try {
        return JSON.parse(readFileSync(config.stateFile, "utf8")) as PortsState;
      } catch {
        return null;
      }
    };
    for (let i = 0; i < 100 && !(state() && api.get("services", "shop", "web")?.status?.loadBalancer); i++)
      await new Promise((r) => setTimeout(r, 50));
    const s = state()!;
    expect(s.error).toMatch(/^RootlessKit API: GET \/v1\/ports failed: connect ENOENT/);
    expect(s.published).toEqual([]);
    expect(s.unpublished).toEqual([expect.objectContaining({ owner: "Service shop/web", hostPort: 80, kind: "skipped" })]);
    expect(api.get("services", "shop", "web")!.status).toEqual({ loadBalancer: { ingress: [{ ip: "192.168.1.20" }] } });
    expect(api.events).toEqual([
      expect.objectContaining({
        reason: "PortNotPublished",
        involvedObject: expect.objectContaining({ kind: "Service", name: "web", uid: expect.any(String) }),
      }),
    ]);
    // The pods of another node are none of its business: listed with a field selector.
    expect(api.requests.some((r) => r.url.startsWith("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode1"))).toBe(true);
    expect(log.join("\n")).toMatch(/Services: listing refused: HTTP 403/);
    // Still running after several resyncs, one Event only, one line about RootlessKit.
    await new Promise((r) => setTimeout(r, 700));
    expect(api.events).toHaveLength(1);
    expect(log.filter((l) => l.startsWith("RootlessKit API"))).toHaveLength(1);
    ac.abort(new Error("SIGTERM"));
    await loop;
    for (let i = 0; i < 50 && api.openWatches() > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(api.openWatches()).toBe(0);
  });

  it("`rootless-k8s ports run` runs the loop until SIGTERM, then exits 0 (a clean stop for systemd)", async () => {
    const dir = tempDir("rk8s-ports-cli-");
    const config = configIn(dir);
    const file = join(dir, "ports.json");
    writeFileSync(file, JSON.stringify(config));
    const child = spawn(process.execPath, [CLI_BUNDLE, "ports", "run", "--config", file], {
      env: { ...process.env, NO_COLOR: "1", ROOTLESS_K8S_NO_UPDATE_CHECK: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    for (let i = 0; i < 200 && !existsSync(config.stateFile); i++) await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(config.stateFile), out).toBe(true);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(out).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z publishing Services' and pods' ports on 0\.0\.0\.0 through /m);
  }, 30_000);

  it("`ports` refuses bad usage (exit 2) and a missing config (exit 3)", async () => {
    expect((await runCli(["ports", "frob"])).code).toBe(2);
    expect((await runCli(["ports", "run"])).stderr).toMatch(/ports run needs --config FILE/);
    const r = await runCli(["ports", "run", "--config", "/nonexistent/ports.json"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/cannot read the ports config \/nonexistent\/ports\.json: ENOENT/);
  });
});
