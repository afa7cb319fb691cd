// Which host ports the node publishes through RootlessKit, from Services and Pods as the API server
// returns them, and the RootlessKit calls that reach exactly that set from what is published now.
import { describe, expect, it } from "vitest";
import {
  type PodObject,
  type PortOptions,
  type PortStatus,
  portSpecOf,
  reconcilePorts,
  type ServiceObject,
  wantedPorts,
} from "../../../cli/plan/ports";

const options: PortOptions = { bindAddress: "0.0.0.0", unprivilegedPortStart: 1024, reserved: [6443] };

function service(name: string, type: string, ports: NonNullable<ServiceObject["spec"]>["ports"], namespace = "default"): ServiceObject {
  return { metadata: { namespace, name }, spec: { type, ports } };
}

function pod(
  name: string,
  phase: string,
  hostPorts: { hostPort: number; protocol?: string; hostIP?: string }[],
  namespace = "default",
): PodObject {
  return {
    metadata: { namespace, name },
    spec: { containers: [{ ports: hostPorts.map((p) => ({ containerPort: 8080, ...p })) }] },
    status: { phase },
  };
}

describe("wantedPorts", () => {
  it("publishes every nodePort of a NodePort Service, TCP and UDP, to the same port inside", () => {
    const dns = service("dns", "NodePort", [
      { name: "tcp", protocol: "TCP", port: 53, nodePort: 30053 },
      { name: "udp", protocol: "UDP", port: 53, nodePort: 30053 },
      { port: 80, nodePort: 30080 }, // protocol defaults to TCP
    ]);
    const w = wantedPorts([dns, service("internal", "ClusterIP", [{ port: 80 }])], [], options);
    expect(w.ports).toEqual([
      { protocol: "tcp", hostIP: "0.0.0.0", hostPort: 30053, childPort: 30053, owner: "Service default/dns" },
      { protocol: "udp", hostIP: "0.0.0.0", hostPort: 30053, childPort: 30053, owner: "Service default/dns" },
      { protocol: "tcp", hostIP: "0.0.0.0", hostPort: 30080, childPort: 30080, owner: "Service default/dns" },
    ]);
    expect(w.skipped).toEqual([]);
    expect(w.conflicts).toEqual([]);
  });

  it("publishes a LoadBalancer's own port to the nodePort of the same entry, and the nodePort itself", () => {
    const lb = service("web", "LoadBalancer", [{ protocol: "TCP", port: 8443, nodePort: 31443 }], "shop");
    expect(wantedPorts([lb], [], options).ports).toEqual([
      { protocol: "tcp", hostIP: "0.0.0.0", hostPort: 8443, childPort: 31443, owner: "Service shop/web" },
      { protocol: "tcp", hostIP: "0.0.0.0", hostPort: 31443, childPort: 31443, owner: "Service shop/web" },
    ]);
  });

  it("skips a LoadBalancer port without a nodePort, and takes a port equal to its own nodePort once", () => {
    const noNodePorts = service("direct", "LoadBalancer", [{ port: 9000 }]);
    const same = service("same", "LoadBalancer", [{ port: 30100, nodePort: 30100 }]);
    const w = wantedPorts([noNodePorts, same], [], options);
    expect(w.ports).toEqual([{ protocol: "tcp", hostIP: "0.0.0.0", hostPort: 30100, childPort: 30100, owner: "Service default/same" }]);
    expect(w.skipped).toEqual([
      { protocol: "tcp", hostPort: 9000, owner: "Service default/direct", reason: expect.stringMatching(/no nodePort/) },
    ]);
    expect(w.conflicts).toEqual([]);
  });

  it("publishes the hostPorts of pods not finished, to the same port, whatever their hostIP", () => {
    const pods = [
      pod("running", "Running", [
        { hostPort: 8081, hostIP: "192.168.1.5" },
        { hostPort: 8082, protocol: "UDP" },
      ]),
      pod("pending", "Pending", [{ hostPort: 8083 }]),
      pod("done", "Succeeded", [{ hostPort: 8084 }]),
      pod("crashed", "Failed", [{ hostPort: 8085 }]),
      { metadata: { namespace: "default", name: "no-host-port" }, spec: { containers: [{ ports: [{ containerPort: 80 }] }] } },
    ];
    expect(wantedPorts([], pods, options).ports).toEqual([
      { protocol: "tcp", hostIP: "0.0.0.0", hostPort: 8081, childPort: 8081, owner: "Pod default/running" },
      { protocol: "udp", hostIP: "0.0.0.0", hostPort: 8082, childPort: 8082, owner: "Pod default/running" },
      { protocol: "tcp", hostIP: "0.0.0.0", hostPort: 8083, childPort: 8083, owner: "Pod default/pending" },
    ]);
  });

  it("skips a privileged host port with the sysctl that allows it, and SCTP with the reason", () => {
    const lb = service("web", "LoadBalancer", [
      { protocol: "TCP", port: 443, nodePort: 30443 },
      { protocol: "SCTP", port: 3868, nodePort: 30868 },
    ]);
    const w = wantedPorts([lb], [], options);
    expect(w.ports.map((p) => p.hostPort)).toEqual([30443]);
    expect(w.skipped).toEqual([
      {
        protocol: "tcp",
        hostPort: 443,
        owner: "Service default/web",
        reason:
          "host port 443 is below net.ipv4.ip_unprivileged_port_start (1024); as root: sysctl net.ipv4.ip_unprivileged_port_start=443",
      },
      {
        protocol: "sctp",
        hostPort: 30868,
        owner: "Service default/web",
        reason: expect.stringMatching(/^SCTP is not forwarded by RootlessKit/),
      },
      {
        protocol: "sctp",
        hostPort: 3868,
        owner: "Service default/web",
        reason: expect.stringMatching(/^SCTP is not forwarded by RootlessKit/),
      },
    ]);
    for (const s of w.skipped) expect(s.reason).not.toContain("\n");
    // With the sysctl lowered, the same port is published.
    expect(wantedPorts([lb], [], { ...options, unprivilegedPortStart: 443 }).ports.map((p) => p.hostPort)).toEqual([443, 30443]);
  });

  it("never publishes a reserved port (the API server's), and says why", () => {
    const w = wantedPorts([], [pod("clash", "Running", [{ hostPort: 6443 }])], options);
    expect(w.ports).toEqual([]);
    expect(w.skipped).toEqual([
      { protocol: "tcp", hostPort: 6443, owner: "Pod default/clash", reason: expect.stringMatching(/reserved for the node/) },
    ]);
    expect(w.reserved).toEqual([6443]);
  });

  it("gives a contested host port to Services before Pods, then by namespace/name, whatever the input order", () => {
    const pods = [pod("b", "Running", [{ hostPort: 30080 }, { hostPort: 9000 }], "a"), pod("a", "Running", [{ hostPort: 9000 }], "b")];
    const services = [
      service("z", "NodePort", [{ port: 80, nodePort: 30080 }], "z"),
      service("a", "NodePort", [{ port: 80, nodePort: 30080 }], "z"),
    ];
    const w = wantedPorts(services, pods, options);
    expect(w.ports.map((p) => [p.hostPort, p.owner])).toEqual([
      [9000, "Pod a/b"],
      [30080, "Service z/a"],
    ]);
    expect(w.conflicts).toEqual([
      {
        protocol: "tcp",
        hostPort: 30080,
        owner: "Service z/z",
        winner: "Service z/a",
        reason: "host port tcp/30080 is already published for Service z/a",
      },
      {
        protocol: "tcp",
        hostPort: 30080,
        owner: "Pod a/b",
        winner: "Service z/a",
        reason: "host port tcp/30080 is already published for Service z/a",
      },
      {
        protocol: "tcp",
        hostPort: 9000,
        owner: "Pod b/a",
        winner: "Pod a/b",
        reason: "host port tcp/9000 is already published for Pod a/b",
      },
    ]);
    expect(wantedPorts([...services].reverse(), [...pods].reverse(), options)).toEqual(w);
    // The same port in another protocol is no conflict.
    const udp = wantedPorts(services, [pod("u", "Running", [{ hostPort: 30080, protocol: "UDP" }])], options);
    expect(udp.ports.map((p) => `${p.protocol}/${p.hostPort}`)).toEqual(["tcp/30080", "udp/30080"]);
  });

  it("binds 127.0.0.1 when asked, and forwards to the node's address inside when given", () => {
    const np = service("np", "NodePort", [{ port: 80, nodePort: 30080 }]);
    const local = wantedPorts([np], [], { ...options, bindAddress: "127.0.0.1", childIP: "10.0.2.100" });
    expect(local.ports).toEqual([
      { protocol: "tcp", hostIP: "127.0.0.1", hostPort: 30080, childPort: 30080, childIP: "10.0.2.100", owner: "Service default/np" },
    ]);
    expect(portSpecOf(local.ports[0]!)).toEqual({
      proto: "tcp",
      parentIP: "127.0.0.1",
      parentPort: 30080,
      childIP: "10.0.2.100",
      childPort: 30080,
    });
    expect(portSpecOf(wantedPorts([np], [], options).ports[0]!)).toEqual({
      proto: "tcp",
      parentIP: "0.0.0.0",
      parentPort: 30080,
      childPort: 30080,
    });
  });
});

describe("reconcilePorts", () => {
  const services = [
    service("web", "LoadBalancer", [{ port: 8080, nodePort: 30080 }]),
    service("dns", "NodePort", [{ protocol: "UDP", port: 53, nodePort: 30053 }]),
  ];
  const wanted = wantedPorts(services, [], options);
  const api: PortStatus = { id: 1, spec: { proto: "tcp", parentIP: "0.0.0.0", parentPort: 6443, childPort: 6443 } };

  it("adds everything wanted to an empty list, in the wanted order", () => {
    expect(reconcilePorts(wanted, [])).toEqual({
      add: [
        { proto: "tcp", parentIP: "0.0.0.0", parentPort: 8080, childPort: 30080 },
        { proto: "udp", parentIP: "0.0.0.0", parentPort: 30053, childPort: 30053 },
        { proto: "tcp", parentIP: "0.0.0.0", parentPort: 30080, childPort: 30080 },
      ],
      remove: [],
    });
  });

  it("keeps what matches, removes what is no longer wanted or differs, adds the rest; the reserved port stays", () => {
    const current: PortStatus[] = [
      { id: 7, spec: { proto: "tcp", parentIP: "0.0.0.0", parentPort: 31000, childPort: 31000 } }, // Service gone
      { id: 3, spec: { proto: "tcp", parentIP: "0.0.0.0", parentPort: 30080, childPort: 30080 } }, // kept
      { id: 5, spec: { proto: "tcp", parentIP: "0.0.0.0", parentPort: 8080, childPort: 30081 } }, // nodePort changed
      { id: 4, spec: { proto: "tcp", parentIP: "0.0.0.0", parentPort: 30053, childPort: 30053 } }, // now UDP
      { id: 6, spec: { proto: "udp", parentIP: "127.0.0.1", parentPort: 30053, childPort: 30053 } }, // another address
      api,
      { id: 2, spec: { proto: "udp", parentIP: "127.0.0.1", parentPort: 6443, childPort: 1 } }, // any entry on a reserved port
    ];
    expect(reconcilePorts(wanted, current)).toEqual({
      add: [
        { proto: "tcp", parentIP: "0.0.0.0", parentPort: 8080, childPort: 30080 },
        { proto: "udp", parentIP: "0.0.0.0", parentPort: 30053, childPort: 30053 },
      ],
      remove: [4, 5, 6, 7],
    });
  });

  it("removes an entry whose child address differs, and counts an empty parentIP as 0.0.0.0", () => {
    const np = wantedPorts([service("np", "NodePort", [{ port: 80, nodePort: 30080 }])], [], { ...options, childIP: "10.0.2.100" });
    const current: PortStatus[] = [{ id: 9, spec: { proto: "tcp", parentPort: 30080, childPort: 30080 } }];
    expect(reconcilePorts(np, current)).toEqual({ add: [portSpecOf(np.ports[0]!)], remove: [9] });
    const same: PortStatus[] = [
      { id: 9, spec: { proto: "tcp", parentIP: "", parentPort: 30080, childIP: "10.0.2.100", childPort: 30080 } },
    ];
    expect(reconcilePorts(np, same)).toEqual({ add: [], remove: [] });
  });

  it("removes every published port but the reserved one when nothing is wanted", () => {
    const none = wantedPorts([], [], options);
    const current: PortStatus[] = [{ id: 2, spec: { proto: "tcp", parentIP: "0.0.0.0", parentPort: 30080, childPort: 30080 } }, api];
    expect(reconcilePorts(none, current)).toEqual({ add: [], remove: [2] });
  });

  it("is idempotent: once the changes are made, there is nothing left to do", () => {
    const changes = reconcilePorts(wanted, [api]);
    const after: PortStatus[] = [api, ...changes.add.map((spec, i) => ({ id: 10 + i, spec }))].reverse();
    expect(reconcilePorts(wanted, after)).toEqual({ add: [], remove: [] });
    // A duplicate of a kept entry is removed, the first (lowest id) stays.
    expect(reconcilePorts(wanted, [...after, { id: 99, spec: after[0]!.spec }])).toEqual({ add: [], remove: [99] });
  });
});
