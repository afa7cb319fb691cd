// The pod network across hosts (cli/plan/overlay.ts): which plans run the overlay, the VTEP of a
// node range, the peers read from Nodes, and the `ip`/`bridge` commands that turn what the device
// holds into exactly those peers. The device's state is read from iproute2's real JSON output
// (iproute2 6.1, Debian 12, captured in a user and network namespace: see test/unit/host/ip-json.test.ts).
import { describe, expect, it } from "vitest";
import { buildPlan } from "../../../cli/plan/index";
import {
  type OverlayNode,
  PUBLIC_IP_ANNOTATION,
  decideOverlay,
  deviceCommands,
  deviceNeedsReplacing,
  keepSourcePlace,
  keepSourceRule,
  overlayChanges,
  peersOf,
  vtepAddress,
  vtepMac,
} from "../../../cli/plan/overlay";
import { baseFacts, upstreamVersions } from "./facts-builder";

const node = (name: string, podCIDR?: string, publicIP?: string): OverlayNode => ({
  metadata: { name, ...(publicIP ? { annotations: { [PUBLIC_IP_ANNOTATION]: publicIP } } : {}) },
  ...(podCIDR ? { spec: { podCIDR } } : {}),
});
const EMPTY = { routes: [], neighbours: [], fdb: [] };

describe("decideOverlay", () => {
  const plan = buildPlan(baseFacts(), {}, upstreamVersions());
  it("runs on a node whose port driver has RootlessKit's port API (slirp4netns, built-in)", () => {
    expect(plan.network.portDriver).toBe("builtin");
    expect(plan.overlay).toMatchObject({ enabled: true, vni: 1, port: 8472, device: "rk8s.1", mtu: 1500 });
    expect(plan.units.overlay).toBe("rootless-k8s-overlay.service");
    expect(plan.overlay!.reasons.join(" ")).toContain("only while the cluster has another node");
  });
  it("is off with pasta (no port API) and with the docker runtime, saying the node is a single node", () => {
    const pasta = decideOverlay({ ...plan.network, portDriver: "implicit", driver: "pasta" }, plan.runtime);
    expect(pasta.enabled).toBe(false);
    expect(pasta.reasons[0]).toContain("--network slirp4netns or builtin");
    const docker = decideOverlay({ ...plan.network, driver: "docker" }, { name: "docker" });
    expect(docker).toMatchObject({ enabled: false });
    expect(docker.reasons[0]).toContain("single node");
  });
});

describe("the VTEP of a node range", () => {
  it("is the range's .0, with a locally administered unicast MAC made of 0a:58 and the address", () => {
    expect(vtepAddress("10.244.1.0/24")).toBe("10.244.1.0");
    expect(vtepAddress("10.88.17.0/24")).toBe("10.88.17.0");
    expect(vtepAddress("not a range")).toBeNull();
    expect(vtepMac("10.244.1.0")).toBe("0a:58:0a:f4:01:00");
    expect(vtepMac("192.168.128.0")).toBe("0a:58:c0:a8:80:00");
    // Bit 1 of the first byte set (locally administered), bit 0 clear (unicast).
    expect(Number.parseInt(vtepMac("10.244.1.0").slice(0, 2), 16) & 3).toBe(2);
  });
});

describe("peersOf", () => {
  it("is every other node with a range and a public address, sorted; the rest wait, each with its reason", () => {
    const { peers, waiting } = peersOf(
      [
        node("z-worker", "10.244.2.0/24", "198.51.100.3"),
        node("self", "10.244.0.0/24", "192.0.2.2"),
        node("a-worker", "10.244.1.0/24", "198.51.100.2"),
        node("registering"),
        node("foreign", "10.244.3.0/24"),
      ],
      "self",
    );
    expect(peers).toEqual([
      { node: "a-worker", podCidr: "10.244.1.0/24", vtep: "10.244.1.0", mac: "0a:58:0a:f4:01:00", publicIP: "198.51.100.2" },
      { node: "z-worker", podCidr: "10.244.2.0/24", vtep: "10.244.2.0", mac: "0a:58:0a:f4:02:00", publicIP: "198.51.100.3" },
    ]);
    expect(waiting).toEqual([
      "foreign: no rootless-k8s.io/public-ip annotation (its overlay is not running)",
      "registering: no pod range yet (spec.podCIDR)",
    ]);
  });
});

describe("overlayChanges", () => {
  const { peers } = peersOf([node("w1", "10.244.1.0/24", "198.51.100.2"), node("w2", "10.244.2.0/24", "198.51.100.3")], "self");
  const synced = {
    routes: [
      { dst: "10.244.1.0/24", gateway: "10.244.1.0" },
      { dst: "10.244.2.0/24", gateway: "10.244.2.0" },
    ],
    neighbours: [
      { dst: "10.244.1.0", lladdr: "0a:58:0a:f4:01:00" },
      { dst: "10.244.2.0", lladdr: "0a:58:0a:f4:02:00" },
    ],
    fdb: [
      { mac: "0a:58:0a:f4:01:00", dst: "198.51.100.2" },
      { mac: "0a:58:0a:f4:02:00", dst: "198.51.100.3" },
    ],
  };

  it("from an empty device: per peer the forwarding entry, the neighbour, the route (in the order a packet needs them)", () => {
    expect(overlayChanges("rk8s.1", peers.slice(0, 1), EMPTY)).toEqual([
      ["bridge", "fdb", "append", "0a:58:0a:f4:01:00", "dev", "rk8s.1", "dst", "198.51.100.2", "self", "permanent"],
      ["ip", "neigh", "replace", "10.244.1.0", "lladdr", "0a:58:0a:f4:01:00", "dev", "rk8s.1", "nud", "permanent"],
      ["ip", "route", "replace", "10.244.1.0/24", "via", "10.244.1.0", "dev", "rk8s.1", "onlink"],
    ]);
  });

  it("makes no command when the device already holds exactly the peers", () => {
    expect(overlayChanges("rk8s.1", peers, synced)).toEqual([]);
  });

  it("a node gone: its three entries removed, the other's kept", () => {
    expect(overlayChanges("rk8s.1", peers.slice(0, 1), synced)).toEqual([
      ["ip", "route", "del", "10.244.2.0/24", "dev", "rk8s.1"],
      ["ip", "neigh", "del", "10.244.2.0", "dev", "rk8s.1"],
      ["bridge", "fdb", "del", "0a:58:0a:f4:02:00", "dev", "rk8s.1", "dst", "198.51.100.3"],
    ]);
  });

  it("a node's host address changed: its forwarding entry replaced, nothing else", () => {
    const moved = peers.map((p) => (p.node === "w2" ? { ...p, publicIP: "198.51.100.9" } : p));
    expect(overlayChanges("rk8s.1", moved, synced)).toEqual([
      ["bridge", "fdb", "del", "0a:58:0a:f4:02:00", "dev", "rk8s.1", "dst", "198.51.100.3"],
      ["bridge", "fdb", "append", "0a:58:0a:f4:02:00", "dev", "rk8s.1", "dst", "198.51.100.9", "self", "permanent"],
    ]);
  });

  it("an entry made by hand that no node stands for is removed", () => {
    const stray = { ...synced, fdb: [...synced.fdb, { mac: "00:00:00:00:00:00", dst: "203.0.113.9" }] };
    expect(overlayChanges("rk8s.1", peers, stray)).toEqual([
      ["bridge", "fdb", "del", "00:00:00:00:00:00", "dev", "rk8s.1", "dst", "203.0.113.9"],
    ]);
  });
});

describe("deviceCommands and keepSourceRule", () => {
  const o = { vni: 1, port: 8472, device: "rk8s.1", mtu: 1500 };
  it("create a VXLAN device without learning, its MAC from the VTEP, the VTEP as a /32, then up", () => {
    expect(deviceCommands(o, "10.244.0.0", false)).toEqual([
      [
        "ip",
        "link",
        "add",
        "rk8s.1",
        "address",
        "0a:58:0a:f4:00:00",
        "type",
        "vxlan",
        "id",
        "1",
        "dstport",
        "8472",
        "nolearning",
        "noudpcsum",
      ],
      ["ip", "link", "set", "rk8s.1", "mtu", "1500"],
      ["ip", "addr", "replace", "10.244.0.0/32", "dev", "rk8s.1"],
      ["ip", "link", "set", "rk8s.1", "up"],
    ]);
    expect(deviceCommands(o, "10.244.0.0", true)[0]).toEqual(["ip", "link", "set", "rk8s.1", "address", "0a:58:0a:f4:00:00"]);
  });
  it("a device already there is made anew only for what `ip link set` cannot change: kind, VNI, port, outer UDP checksum", () => {
    const link = { mac: "0a:58:0a:f4:00:00", mtu: 1500, up: true, ipv4: ["10.244.0.0/32"] };
    const vx = (v: Partial<{ vni: number | null; port: number | null; udpCsum: boolean | null }>) => ({
      ...link,
      vxlan: { vni: 1, port: 8472, udpCsum: false, ...v },
    });
    expect(deviceNeedsReplacing(o, vx({}))).toBeNull();
    expect(deviceNeedsReplacing(o, vx({ udpCsum: true }))).toBe("it sums its outer UDP (udpcsum)");
    expect(deviceNeedsReplacing(o, vx({ vni: 2 }))).toBe("its VNI is 2, not 1");
    expect(deviceNeedsReplacing(o, vx({ port: 4789 }))).toBe("its UDP port is 4789, not 8472");
    expect(deviceNeedsReplacing(o, { ...link, vxlan: null })).toBe("it is not a VXLAN device");
    // An iproute2 that does not show a field: not a reason to delete the device on every pass.
    expect(deviceNeedsReplacing(o, vx({ vni: null, port: null, udpCsum: null }))).toBeNull();
  });
  it("exempts pod-to-pod traffic leaving by the device from the bridge's masquerade", () => {
    expect(keepSourceRule("rk8s.1", "10.244.0.0/16").join(" ")).toMatch(
      /^POSTROUTING -o rk8s\.1 -s 10\.244\.0\.0\/16 -d 10\.244\.0\.0\/16 .* -j ACCEPT$/,
    );
  });
});

describe("keepSourcePlace", () => {
  const ours =
    '-A POSTROUTING -s 10.244.0.0/16 -d 10.244.0.0/16 -o rk8s.1 -m comment --comment "rootless-k8s: pod to pod across nodes keeps its source" -j ACCEPT';
  const kube = '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING';
  it("is first, behind kube-proxy's jump, or absent, in iptables -S order", () => {
    expect(keepSourcePlace(["-P POSTROUTING ACCEPT", ours, kube].join("\n"))).toBe("first");
    expect(keepSourcePlace(["-P POSTROUTING ACCEPT", kube, ours].join("\n"))).toBe("behind");
    expect(keepSourcePlace(["-P POSTROUTING ACCEPT", kube].join("\n"))).toBe("absent");
  });
});
