// The RootlessKit API client against a real RootlessKit (Debian's, on PATH), run by an ordinary test
// user as the node runs it: slirp4netns, the builtin port driver, `sleep infinity` as the child.
// Checks info, publishing a port that carries data to a listener inside the namespaces, RootlessKit's
// refusals coming back per item, removal, and reconcilePorts + applyPortChanges reaching exactly the
// wanted set. Failures to reach the API (no socket, no answer) are checked against local sockets.
// Skips, saying why, where the host lacks the tools (CI installs them: see .ci/run).
import type { ChildProcess } from "node:child_process";
import * as http from "node:http";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyPortChanges, RootlessKitError, rootlessKitClient } from "../../../cli/clients/rootlesskit";
import { type PortSpec, reconcilePorts, wantedPorts } from "../../../cli/plan/ports";
import { freePort, listen } from "../../helpers/net";
import { tempDir } from "../../helpers/temp";
import {
  listenInside,
  readAll,
  type RunningRootlessKit,
  slirpRootlessKitSkipReason,
  startRootlessKit,
  stopGroup,
} from "../../helpers/rootlesskit";
import { testUser } from "../../helpers/user";

const NAME = "rk8s-rkapi";
const reason = slirpRootlessKitSkipReason("rootlesskit-api");

describe.skipIf(reason !== null)("the RootlessKit API client, against a real RootlessKit (slirp4netns, builtin port driver)", () => {
  const user = testUser(NAME, { subIds: "auto" });
  const work = user.newDir("rk8s-rkapi-");
  const stateDir = join(work, "state");
  const client = rootlessKitClient(join(stateDir, "api.sock"));
  const spec = (parentPort: number, childPort: number, proto = "tcp"): PortSpec => ({
    proto,
    parentIP: "127.0.0.1",
    parentPort,
    childPort,
  });
  let rootlesskit: RunningRootlessKit | null = null;
  let inside: ChildProcess | null = null;
  let childPid = 0;

  beforeAll(async () => {
    rootlesskit = await startRootlessKit(user, stateDir);
    childPid = rootlesskit.childPid;
  }, 60_000);

  afterAll(async () => {
    await stopGroup(inside);
    await stopGroup(rootlesskit?.process);
  });

  it("info names the builtin port driver (TCP and UDP, no SCTP), slirp4netns, the state dir and the child", async () => {
    const info = await client.info();
    expect(info.apiVersion).toMatch(/^1\./);
    expect(info.stateDir).toBe(stateDir);
    expect(info.childPID).toBe(childPid);
    expect(info.networkDriver?.driver).toBe("slirp4netns");
    expect(info.portDriver?.driver).toBe("builtin");
    expect(info.portDriver?.protos).toEqual(expect.arrayContaining(["tcp", "udp"]));
    expect(info.portDriver?.protos.some((p) => p.startsWith("sctp"))).toBe(false);
  });

  it("lists no ports on a fresh RootlessKit (its null answer becomes [])", async () => {
    expect(await client.listPorts()).toEqual([]);
  });

  it("publishes a TCP port on 127.0.0.1: listed, and carrying data from a listener inside the namespaces", async () => {
    const hostPort = await freePort();
    const added = await client.addPort(spec(hostPort, 8080));
    expect(added).toEqual({ id: expect.any(Number), spec: spec(hostPort, 8080) });
    expect(await client.listPorts()).toContainEqual(added);
    // RootlessKit accepts the TCP connection on the host before it dials inside: with nothing
    // listening there, the connection opens and closes without data. Only data proves the path.
    expect(await readAll(hostPort)).toBe("");

    inside = await listenInside(user, childPid, "127.0.0.1", 8080);
    expect(await readAll(hostPort)).toBe("hello from inside to 127.0.0.1\n");
  });

  it("refuses a host port already taken, with RootlessKit's message: a throw from addPort, a result from applyPortChanges", async () => {
    const published = await client.addPort(spec(await freePort(), 8081));
    const conflict = await client.addPort(published.spec).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(RootlessKitError);
    expect(conflict).toMatchObject({ status: 400, reason: `conflict with ID ${published.id}` });

    const host = await listen(createServer()); // a host process holds this one
    const fresh = spec(await freePort(), 8082);
    try {
      const results = await applyPortChanges(client, { add: [published.spec, spec(host.port, 8083), fresh], remove: [] });
      expect(results).toEqual([
        { action: "add", spec: published.spec, id: null, error: `conflict with ID ${published.id}` },
        { action: "add", spec: spec(host.port, 8083), id: null, error: expect.stringMatching(/bind: address already in use$/) },
        { action: "add", spec: fresh, id: expect.any(Number), error: null },
      ]);
      const taken = await client.addPort(spec(host.port, 8083)).catch((e: Error) => e.message);
      expect(taken).toMatch(
        new RegExp(`^RootlessKit API: adding port tcp 127\\.0\\.0\\.1:${host.port} → 8083 failed: .*address already in use$`),
      );
    } finally {
      await host.close();
    }
  });

  it("removes a port: gone from the list and the host port free; an unknown id is RootlessKit's error", async () => {
    const added = await client.addPort(spec(await freePort(), 8084));
    await client.removePort(added.id);
    expect((await client.listPorts()).map((p) => p.id)).not.toContain(added.id);
    await (await listen(createServer(), { port: added.spec.parentPort })).close();
    await expect(client.removePort(added.id)).rejects.toMatchObject({ status: 400, reason: `unknown id: ${added.id}` });
    expect(await applyPortChanges(client, { add: [], remove: [added.id] })).toEqual([
      { action: "remove", id: added.id, error: `unknown id: ${added.id}` },
    ]);
  });

  it("applyPortChanges with reconcilePorts' result reaches exactly the wanted set, the reserved port kept; again: nothing to do", async () => {
    const api = await client.addPort(spec(await freePort(), 6443)); // the node's own, as --publish makes it
    const [tcpUdp, lbPort, lbNodePort] = [await freePort(), await freePort(), await freePort()];
    const services = [
      {
        metadata: { namespace: "default", name: "dns" },
        spec: {
          type: "NodePort",
          ports: [
            { port: 53, nodePort: tcpUdp },
            { protocol: "UDP", port: 53, nodePort: tcpUdp },
          ],
        },
      },
      { metadata: { namespace: "shop", name: "web" }, spec: { type: "LoadBalancer", ports: [{ port: lbPort, nodePort: lbNodePort }] } },
    ];
    const wanted = wantedPorts(services, [], { bindAddress: "127.0.0.1", unprivilegedPortStart: 1024, reserved: [api.spec.parentPort] });
    const before = await client.listPorts();
    const changes = reconcilePorts(wanted, before);
    expect(changes.remove).toEqual(before.filter((p) => p.id !== api.id).map((p) => p.id)); // the earlier tests' ports
    expect(changes.add).toHaveLength(4);

    const results = await applyPortChanges(client, changes);
    expect(results.filter((r) => r.error !== null)).toEqual([]);
    expect(results.map((r) => r.action)).toEqual([...changes.remove.map(() => "remove"), ...changes.add.map(() => "add")]);
    const after = await client.listPorts();
    const key = (s: PortSpec) => `${s.proto} ${s.parentIP}:${s.parentPort} ${s.childPort}`;
    expect(after.map((p) => key(p.spec)).sort()).toEqual([api.spec, ...changes.add].map(key).sort());
    expect(reconcilePorts(wanted, after)).toEqual({ add: [], remove: [] });
  });
});

describe("the RootlessKit API client when RootlessKit does not answer", () => {
  const dir = tempDir("rk8s-rkapi-sock-");

  it("names the call and the socket when there is no socket; applyPortChanges throws rather than reporting per item", async () => {
    const missing = join(dir, "nothing.sock");
    const client = rootlessKitClient(missing);
    await expect(client.info()).rejects.toThrow(`RootlessKit API: GET /v1/info failed: connect ENOENT ${missing}`);
    await expect(client.listPorts()).rejects.toMatchObject({ status: null });
    await expect(applyPortChanges(client, { add: [], remove: [3] })).rejects.toThrow(/removing port id 3 failed: connect ENOENT/);
  });

  it("gives up after the timeout on a socket that never answers", async () => {
    const path = join(dir, "silent.sock");
    const silent: Server = createServer(() => {});
    await new Promise<void>((r) => silent.listen(path, r));
    try {
      const started = Date.now();
      await expect(rootlessKitClient(path, { timeoutMs: 300 }).listPorts()).rejects.toThrow(
        `RootlessKit API: GET /v1/ports failed: no answer on ${path} within 300 ms`,
      );
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      silent.close();
    }
  });

  it("reports a non-JSON error answer by its status, on one line", async () => {
    const path = join(dir, "odd.sock");
    const odd = http.createServer((_req, res) => res.writeHead(502).end("bad\ngateway\n"));
    await new Promise<void>((r) => odd.listen(path, r));
    try {
      await expect(rootlessKitClient(path).removePort(1)).rejects.toThrow(
        /^RootlessKit API: removing port id 1 failed: HTTP 502 bad gateway$/,
      );
    } finally {
      odd.close();
    }
  });
});
