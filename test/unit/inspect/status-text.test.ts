// `rootless-k8s status`'s text (cli/inspect/status-text.ts) for the overlay: each other node with its
// range and host and whether it answered through the overlay, or, alone, the node's VTEP.
import { describe, expect, it } from "vitest";
import type { NodeStatus } from "../../../cli/inspect/status";
import { renderStatus } from "../../../cli/inspect/status-text";
import { makeStyle } from "../../../cli/ui/output";

const base: NodeStatus = {
  schemaVersion: 1,
  healthy: true,
  problems: [],
  state: "installed",
  failedStep: null,
  node: "w1",
  mode: "none",
  runtime: { name: "containerd", version: "2.3.7", cri: { answering: true, version: "containerd v2.3.7 (CRI v1)", detail: null } },
  versions: { set: "k8s-1.36.3", previous: null, components: { kubernetes: "1.36.3" } },
  api: { url: "https://192.0.2.2:6443", ready: true, detail: "/readyz ok" },
  nodeView: null,
  addons: [],
  ports: [],
  publishing: { publisher: null, published: [], unpublished: [], detail: null },
  overlay: null,
  networkPolicy: { enforced: true, detail: "0 policies; 0 of this node's pods isolated for ingress, 0 for egress", problem: false },
  units: [],
  logs: { to: "journal", where: "journalctl --user" },
  supervisor: "systemd",
  waitingForNodes: [],
} as unknown as NodeStatus;
/** The overlay's rows: its first line and the continuation lines right after it. */
const lines = (st: NodeStatus) => {
  const all = renderStatus(st, "/home/u", makeStyle(false));
  const i = all.findIndex((l) => l.startsWith("  overlay "));
  const rest = all.slice(i + 1);
  return i < 0
    ? []
    : [
        all[i]!,
        ...rest.slice(
          0,
          rest.findIndex((l) => !l.startsWith("              ")),
        ),
      ];
};

describe("status: the overlay", () => {
  it("lists each other node, its range, its host and whether it answers", () => {
    const st = {
      ...base,
      overlay: {
        schemaVersion: 1 as const,
        updated: "2026-12-03T15:00:00Z",
        vtep: "10.244.1.0",
        waiting: [],
        peers: [
          { node: "cp", podCidr: "10.244.0.0/24", vtep: "10.244.0.0", publicIP: "192.0.2.2", reachable: true, error: null },
          {
            node: "w2",
            podCidr: "10.244.2.0/24",
            vtep: "10.244.2.0",
            publicIP: "198.51.100.3",
            reachable: false,
            error: "no answer within 3 s",
          },
        ],
      },
    };
    expect(lines(st)).toEqual([
      "  overlay     cp 10.244.0.0/24 at 192.0.2.2: answers",
      "              w2 10.244.2.0/24 at 198.51.100.3: does not answer (no answer within 3 s)",
    ]);
  });
  it("alone: its VTEP and no other node", () => {
    const st = { ...base, overlay: { schemaVersion: 1 as const, updated: "x", vtep: "10.244.0.0", waiting: [], peers: [] } };
    expect(lines(st)).toEqual(["  overlay     VTEP 10.244.0.0; no other node"]);
  });
});

describe("status: the eviction manager", () => {
  const node = {
    name: "w1",
    ready: true,
    conditions: [
      { type: "Ready", status: "True", reason: "KubeletReady" },
      { type: "MemoryPressure", status: "False" },
      { type: "DiskPressure", status: "False" },
    ],
    kubeletVersion: "v1.36.3",
    labels: {},
    taints: [],
    podCidr: "10.244.0.0/24",
  };
  const rows = (eviction: NodeStatus["eviction"]) =>
    renderStatus({ ...base, nodeView: node, eviction }, "/home/u", makeStyle(false)).filter((l) => /^ {2}(conditions|eviction) /.test(l));

  it("shows what it observes, and the conditions as they are", () => {
    expect(rows({ observing: true, detail: "memory 900 MiB available, disk 40% available, images 40% available" })).toEqual([
      "  conditions  MemoryPressure=False, DiskPressure=False",
      "  eviction    observing: memory 900 MiB available, disk 40% available, images 40% available",
    ]);
  });

  it("marks the pressure conditions unknown when it observes nothing", () => {
    expect(rows({ observing: false, detail: "the kubelet's summary lacks the node's file system" })).toEqual([
      "  conditions  MemoryPressure=False, DiskPressure=False (unknown: nothing is observed)",
      "  eviction    not observing: the kubelet's summary lacks the node's file system",
    ]);
  });

  it("says when it could not read it, and keeps the conditions", () => {
    expect(rows({ observing: null, detail: "the kubelet's summary: HTTP 503" })).toEqual([
      "  conditions  MemoryPressure=False, DiskPressure=False",
      "  eviction    not read (the kubelet's summary: HTTP 503)",
    ]);
  });
});

describe("status: the node's NodePort range and the user's per-user limits (#40, #45)", () => {
  it("shows the range, and threads and keys against their limits", () => {
    const st = {
      ...base,
      nodePorts: "31000-31099",
      limits: { keys: { used: 4, max: 200 }, nproc: 96367, threads: 1698, threadsMax: 192734 },
    } as NodeStatus;
    const all = renderStatus(st, "/home/u", makeStyle(false));
    expect(all).toContain("  node ports  31000-31099 (Services' NodePorts)");
    expect(all).toContain("  limits      threads 1698 of 96367 (ulimit -u); keys 4 of 200 (kernel.keys.maxkeys)");
  });
  it("a worker shows no range of its own; unknown limits are said so", () => {
    const all = renderStatus(
      { ...base, nodePorts: null, limits: { keys: null, nproc: null, threads: null, threadsMax: null } } as NodeStatus,
      "/home/u",
      makeStyle(false),
    );
    expect(all.some((l) => l.startsWith("  node ports"))).toBe(false);
    expect(all).toContain("  limits      unknown");
  });
});

describe("status: what runs the node", () => {
  const row = (st: NodeStatus) => renderStatus(st, "/home/u", makeStyle(false)).find((l) => l.startsWith("  runs under"));
  it("under up: the supervisor's pid (the target's), and that nothing starts it at boot; nothing under systemd", () => {
    const target = {
      unit: "rootless-k8s.target",
      activeState: "active",
      subState: "active",
      result: "success",
      mainPid: 4242,
      nRestarts: 0,
    };
    expect(row({ ...base, supervisor: "up", units: [target] })).toMatch(/runs under\s+rootless-k8s up \(pid 4242\); not started at boot$/);
    expect(row({ ...base, supervisor: "up", units: [{ ...target, activeState: "inactive", mainPid: 0 }] })).toMatch(
      /rootless-k8s up: not running;/,
    );
    expect(row(base)).toBeUndefined();
  });
});

describe("status: NetworkPolicy (#44)", () => {
  const text = (st: NodeStatus) => renderStatus(st, "/home/u", makeStyle(false));
  it("says enforced, with what", () => {
    expect(text(base)).toContain("  network policy: enforced (0 policies; 0 of this node's pods isolated for ingress, 0 for egress)");
  });
  it("says not enforced, with the reason: never silent", () => {
    const st = { ...base, networkPolicy: { enforced: false, detail: "turned off with --no-network-policy", problem: false } };
    expect(text(st)).toContain("  network policy: not enforced (turned off with --no-network-policy)");
  });
});
