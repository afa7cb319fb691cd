// The worker's plan (`rootless-k8s join`): this host's own plan (a Debian 12 host like the
// development machine, built by cli/plan) shaped by what a control plane publishes.
import { describe, expect, it } from "vitest";
import { UserError } from "../../../cli/errors";
import { buildPlan, planProblems } from "../../../cli/plan/index";
import {
  type ClusterParameters,
  parseClusterParameters,
  roleConflict,
  workerAvoids,
  workerPlan,
  workerSkewProblem,
} from "../../../cli/plan/worker";
import { baseFacts, upstreamVersions, withFacts } from "./facts-builder";

const versions = upstreamVersions();
const k8s = versions.components.kubernetes!;
const base = buildPlan(baseFacts(), {}, versions);
const cluster: ClusterParameters = {
  pods: "10.88.0.0/16",
  services: "10.43.0.0/16",
  firstServiceIP: "10.43.0.1",
  dns: { serviceIP: "10.43.0.10", domain: "cluster.local" },
  kubernetes: k8s,
};
const join = {
  server: "https://192.0.2.2:6443",
  caPem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
  caHash: `sha256:${"a".repeat(64)}`,
};

describe("workerPlan", () => {
  const w = workerPlan(base, { ...join, cluster });

  it("is a worker of that control plane, advertising the host's first address", () => {
    expect(w.role).toBe("worker");
    expect(w.join).toMatchObject({ ...join, nodeIP: "192.168.1.20", controlPlaneVersion: k8s });
    expect(w.cidrs.node).toBeNull();
    expect(w.join!.reasons.join("\n")).toContain("https://192.0.2.2:6443");
  });

  it("takes the control plane's networks and DNS, not its own choice", () => {
    expect(w.cidrs).toMatchObject({ pods: "10.88.0.0/16", services: "10.43.0.0/16", firstServiceIP: "10.43.0.1" });
    expect(w.addons!.dns).toMatchObject({ enabled: true, serviceIP: "10.43.0.10", domain: "cluster.local" });
    const noDns = workerPlan(base, { ...join, cluster: { ...cluster, dns: null } });
    expect(noDns.addons!.dns.enabled).toBe(false);
  });

  it("publishes the kubelet's port on the host, not the API server's; runs no add-on, no approver", () => {
    expect(w.network.published).toEqual([{ hostIP: "0.0.0.0", hostPort: 10250, namespacePort: 10250, protocol: "tcp" }]);
    expect(w.addons!.storage!.enabled).toBe(false);
    expect(w.addons!.metrics!.enabled).toBe(false);
    expect(w.units.csrApprover).toBeNull();
  });

  it("publishes NodePorts on its own host too, but leaves LoadBalancer ingress to the control plane's publisher", () => {
    expect(w.publish!.enabled).toBe(true);
    expect(w.units.ports).toBe("rootless-k8s-ports.service");
    expect(w.publish!.ingressIPs).toEqual([]);
  });

  it("runs the overlay, which reaches the other nodes' pods", () => {
    expect(w.overlay).toMatchObject({ enabled: true, vni: 1, port: 8472, device: "rk8s.1" });
    expect(w.units.overlay).toBe("rootless-k8s-overlay.service");
  });

  it("runs its overlay always: a worker has joined another node, so nothing of it is on demand (#33)", () => {
    expect(base.onDemand?.units).toContain("rootless-k8s-overlay.service");
    expect(w.onDemand).toEqual({ units: [], reasons: [] });
  });

  it("refuses to join where the overlay cannot run (pasta: no port API for its UDP port), naming the drivers that can", () => {
    const pasta = { ...base, overlay: { ...base.overlay!, enabled: false, reasons: ["off: pasta"] } };
    const e = (() => {
      try {
        workerPlan(pasta, { ...join, cluster });
      } catch (x) {
        return x;
      }
    })() as UserError;
    expect(e).toBeInstanceOf(UserError);
    expect(e.exitCode).toBe(3);
    expect(e.fix).toContain("--network slirp4netns or --network builtin");
  });

  it("keeps the pod range a node already has, and --node-ip", () => {
    const again = workerPlan(base, { ...join, cluster, podCidr: "10.88.1.0/24", nodeIP: "198.51.100.2" });
    expect(again.join!.nodeIP).toBe("198.51.100.2");
    expect(again.cidrs.node).toBe("10.88.1.0/24");
  });

  it("refuses a worker newer than its control plane (exit 3), naming the upgrade to do first", () => {
    const older = { ...cluster, kubernetes: "1.35.2" };
    const e = (() => {
      try {
        workerPlan(base, { ...join, cluster: older });
      } catch (x) {
        return x;
      }
    })() as UserError;
    expect(e).toBeInstanceOf(UserError);
    expect(e.exitCode).toBe(3);
    expect(e.message).toContain(`${k8s} is newer than its control plane's 1.35.2`);
    expect(e.fix).toMatch(/upgrade the control plane first/);
  });

  it("refuses a host with no address but loopback, and a --node-ip that is no address", () => {
    const lonely = buildPlan(
      withFacts(baseFacts(), (f) => {
        f.network.addresses = ["127.0.0.1"];
      }),
      {},
      versions,
    );
    expect(() => workerPlan(lonely, { ...join, cluster })).toThrow(/no address besides loopback/);
    expect(() => workerPlan(base, { ...join, cluster, nodeIP: "eth0" })).toThrow(/not an IPv4 address/);
  });
});

describe("a worker's plan on a host", () => {
  it("is refused when the kubelet's port is taken there, naming it as what the control plane reaches", () => {
    const facts = withFacts(baseFacts(), (f) => {
      f.network.listeners = [{ port: 10250, uid: 0, address: "0.0.0.0" }];
    });
    const w = workerPlan(buildPlan(facts, {}, versions), { ...join, cluster });
    const [p] = planProblems(w, facts);
    expect(p).toMatchObject({ id: "port-in-use", message: "host port 10250 is already in use (by root (uid 0))" });
    expect(p!.fix).toContain("the control plane reaches this worker's kubelet there");
    // The API server's port is no worker's: taken, it stops nothing.
    const api = withFacts(baseFacts(), (f) => {
      f.network.listeners = [{ port: 6443, uid: 0, address: "0.0.0.0" }];
    });
    expect(planProblems(workerPlan(buildPlan(api, {}, versions), { ...join, cluster }), api)).toEqual([]);
  });
});

describe("a worker's namespace network", () => {
  it("keeps clear of its control plane's address: one at 10.0.2.15 (a VM's) is not put on the namespace's own link", () => {
    // Found on the VM route: the worker took 10.0.2.0/24 (no route of its host holds it), so the
    // control plane at 10.0.2.15 was on-link inside the namespace: "no route to host".
    const atVm = { ...join, server: "https://10.0.2.15:6443" };
    const plain = workerPlan(buildPlan(baseFacts(), {}, versions), { ...atVm, cluster });
    expect(plain.network.namespaceCidr).toBe("10.0.2.0/24");
    const avoids = workerAvoids(atVm.server, cluster);
    expect(avoids).toEqual(["10.0.2.15/32", "10.88.0.0/16", "10.43.0.0/16"]);
    const w = workerPlan(buildPlan(baseFacts(), { avoidCidrs: avoids }, versions), { ...atVm, cluster });
    expect(w.network.namespaceCidr).toBe("10.0.3.0/24");
    expect(w.network.namespaceIP).toBe("10.0.3.100");
    expect(workerAvoids("https://cp.example.org:6443", cluster)).toEqual(["10.88.0.0/16", "10.43.0.0/16"]);
  });
});

describe("workerSkewProblem", () => {
  it("allows the same version and older kubelets, refuses a newer one", () => {
    expect(workerSkewProblem("1.36.3", "1.36.3")).toBeNull();
    expect(workerSkewProblem("1.35.0", "1.36.3")).toBeNull();
    expect(workerSkewProblem("1.36.4", "1.36.3")).toMatch(/newer/);
    expect(workerSkewProblem("1.37.2", "1.36.3")).toMatch(/never be newer than the API server/);
  });
});

describe("parseClusterParameters", () => {
  it("reads what a control plane writes", () => {
    expect(parseClusterParameters(JSON.stringify(cluster))).toEqual(cluster);
    expect(parseClusterParameters(JSON.stringify({ ...cluster, dns: null }))!.dns).toBeNull();
  });
  it("refuses anything else", () => {
    for (const bad of [
      "",
      "null",
      "{",
      JSON.stringify({ ...cluster, pods: "10.88.0.0" }),
      JSON.stringify({ ...cluster, kubernetes: "v1.36" }),
      JSON.stringify({ ...cluster, dns: { serviceIP: "x", domain: "cluster.local" } }),
    ])
      expect(parseClusterParameters(bad)).toBeNull();
  });
});

describe("roleConflict", () => {
  const worker = workerPlan(base, { ...join, cluster });
  it("refuses install over a worker and join over a server, naming uninstall", () => {
    expect(roleConflict("install", worker)?.message).toContain("is a worker of https://192.0.2.2:6443");
    expect(roleConflict("install", worker)?.exitCode).toBe(3);
    expect(roleConflict("join", base)?.fix).toContain("rootless-k8s uninstall");
  });
  it("lets each command go on with its own kind of node, or none", () => {
    expect(roleConflict("install", base)).toBeNull();
    expect(roleConflict("join", worker)).toBeNull();
    expect(roleConflict("upgrade", worker)).toBeNull();
    expect(roleConflict("install", null)).toBeNull();
  });
});
