// `status` on published ports: RootlessKit's list joined with the port publisher's state file (an
// owner for every entry), the ports not published with their reasons, what pods see of the client,
// and what it says when the publisher is off, has written nothing yet, or RootlessKit does not answer.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { PortsState } from "../../../cli/agents/ports-controller";
import { rootlessKitClient } from "../../../cli/clients/rootlesskit";
import { portsStatus, publishedView } from "../../../cli/inspect/ports-status";
import { portsLines } from "../../../cli/inspect/status-text";
import { buildPlan } from "../../../cli/plan";
import { layout } from "../../../cli/render/layout";
import { tempDir } from "../../helpers/temp";
import { baseFacts, upstreamVersions, withFacts } from "../plan/facts-builder";

const plain = {
  bold: (x: string) => x,
  dim: (x: string) => x,
  red: (x: string) => x,
  green: (x: string) => x,
  yellow: (x: string) => x,
} as never;

const state: PortsState = {
  schemaVersion: 1,
  updated: "2026-12-02T10:00:00.000Z",
  bindAddress: "0.0.0.0",
  published: [
    { protocol: "tcp", hostIP: "0.0.0.0", hostPort: 30080, childIP: "10.0.2.100", childPort: 30080, owner: "Service shop/web", id: 2 },
    { protocol: "udp", hostIP: "0.0.0.0", hostPort: 30053, childIP: "10.0.2.100", childPort: 30053, owner: "Service default/dns", id: 3 },
  ],
  unpublished: [
    {
      protocol: "tcp",
      hostPort: 8080,
      owner: "Pod default/p",
      reason: "listen tcp 0.0.0.0:8080: bind: address already in use",
      kind: "refused",
    },
  ],
  error: null,
};
const current = [
  { id: 3, spec: { proto: "udp", parentIP: "0.0.0.0", parentPort: 30053, childIP: "10.0.2.100", childPort: 30053 } },
  { id: 1, spec: { proto: "tcp", parentIP: "0.0.0.0", parentPort: 6443, childPort: 6443 } },
  { id: 2, spec: { proto: "tcp", parentIP: "0.0.0.0", parentPort: 30080, childIP: "10.0.2.100", childPort: 30080 } },
  { id: 9, spec: { proto: "tcp", parentIP: "127.0.0.1", parentPort: 9999, childPort: 1 } },
];

describe("published ports in status", () => {
  it("names the owner of every port RootlessKit publishes: the publisher's, the API server's, and a stranger", () => {
    expect(publishedView(current, state, [6443])).toEqual([
      { protocol: "tcp", hostIP: "0.0.0.0", hostPort: 6443, target: "6443", owner: "the API server" },
      { protocol: "tcp", hostIP: "127.0.0.1", hostPort: 9999, target: "1", owner: "not rootless-k8s's (removed at the next pass)" },
      { protocol: "udp", hostIP: "0.0.0.0", hostPort: 30053, target: "10.0.2.100:30053", owner: "Service default/dns" },
      { protocol: "tcp", hostIP: "0.0.0.0", hostPort: 30080, target: "10.0.2.100:30080", owner: "Service shop/web" },
    ]);
  });

  it("prints one line per port with its owner, the ones not published with why, and the client address pods see", () => {
    const st = {
      publisher: { enabled: true, unit: "rootless-k8s-ports.service", bindAddress: "0.0.0.0", keepsSourceIP: { tcp: true, udp: false } },
      published: publishedView(current.slice(0, 3), state, [6443]),
      unpublished: state.unpublished,
      updated: state.updated,
      detail: null,
    };
    expect(portsLines(st, [], plain)).toEqual([
      "  ports       tcp 0.0.0.0:6443 → 6443               the API server",
      "              udp 0.0.0.0:30053 → 10.0.2.100:30053  Service default/dns",
      "              tcp 0.0.0.0:30080 → 10.0.2.100:30080  Service shop/web",
      "              not published: tcp/8080 for Pod default/p: listen tcp 0.0.0.0:8080: bind: address already in use",
      "  client IP   pods see the client's own address over TCP (Services with externalTrafficPolicy: Local), an address of the node over UDP",
    ]);
  });

  it("off (pasta) or older than publishing: the plan's own ports, as before", async () => {
    const pasta = buildPlan(
      withFacts(baseFacts(), (x) => {
        x.runtimes.slirp4netns = null;
        x.runtimes.pasta = { version: "2024_09_06.6b38f07", raw: "pasta 2024_09_06.6b38f07", path: "/usr/bin/pasta", hostLoToNsLo: false };
      }),
      { network: "pasta" },
      upstreamVersions(),
    );
    const st = await portsStatus(pasta);
    expect(st).toEqual({
      publisher: expect.objectContaining({ enabled: false }),
      published: null,
      unpublished: [],
      updated: null,
      detail: null,
    });
    expect(portsLines(st, pasta.network.published.slice(0, 1), plain)).toEqual(["  ports       0.0.0.0:2379 → 2379/tcp"]);
    const old = { ...pasta };
    delete old.publish;
    expect((await portsStatus(old)).publisher).toBeNull();
  });

  it("reads the state file, and says so when RootlessKit does not answer or nothing was written yet", async () => {
    const run = tempDir("rk8s-ports-status-");
    const plan = buildPlan(
      withFacts(baseFacts(), (x) => (x.user.runtimeDir.path = run)),
      {},
      upstreamVersions(),
    );
    const missing = rootlessKitClient(join(run, "none.sock"));
    const before = await portsStatus(plan, missing);
    expect(before.published).toBeNull();
    expect(before.detail).toMatch(/connect ENOENT/);
    expect(portsLines(before, plan.network.published, plain)[0]).toMatch(
      /^ {2}ports {7}127\.0\.0\.1:6443 → 6443\/tcp \(publisher: RootlessKit API: GET \/v1\/ports failed: connect ENOENT/,
    );
    mkdirSync(join(run, "rootless-k8s"), { recursive: true });
    writeFileSync(
      layout(plan).run.portsState,
      JSON.stringify({ ...state, error: "RootlessKit API: GET /v1/ports failed: connect ENOENT x" }),
    );
    const after = await portsStatus(plan, missing);
    expect(after.unpublished).toEqual(state.unpublished);
    expect(after.updated).toBe(state.updated);
  });
});
