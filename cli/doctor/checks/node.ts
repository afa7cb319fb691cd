// `rootless-k8s doctor --node`: checks on the node as it runs, which only an installed node can
// answer. Pure functions of what cli/inspect/node-facts.ts reads: the units, readiness, the owner
// unit's cgroup and its subtree_control (delegated mode), the snapshotter the runtime really
// uses, the published ports answering from the host, which client address pods see through them,
// linger.
import { DELEGATION_CORE, missingCore } from "../../host/cgroups";
import { fail, ok, skip, warn, type Check } from "../check";
import { delegateFix, lingerFix } from "../fixes";

export interface NodeFacts {
  /** The node's owner (who runs it) and its name. */
  user: string;
  node: string;
  mode: "delegated" | "none";
  /** `waiting`: the on-demand units that start once the node admits another node (not a problem while inactive). */
  units: { owner: string; target: string; states: { unit: string; activeState: string }[]; waiting?: string[] };
  /** The API server's /readyz and the node's Ready condition; `problems` from `status`. */
  ready: { api: boolean; node: boolean; problems: string[] };
  /** The owner unit's cgroup (read in mode delegated only): path below the v2 root, controllers, subtree_control. */
  ownerCgroup: { path: string | null; v2: boolean; controllers: string[] | null; subtreeControl: string[] | null } | null;
  /** The snapshotter the plan chose (null: the runtime's own choice) and the one the runtime reports over CRI. */
  snapshotter: { runtime: string; criSocket: string; planned: string | null; used: string | null; error: string | null };
  /** Each published port asked for /readyz with the admin certificate; null when the kubeconfig cannot be read. */
  ports: {
    kubeconfig: string;
    answers: { host: string; hostPort: number; namespacePort: number; status: number | null; error: string | null }[] | null;
  };
  /** The range Services' NodePorts come from ("30000-32767"); null on a worker. */
  nodePorts: string | null;
  /** What pods see of a client of a published Service port (the plan's decision); null when rootless-k8s publishes none. */
  clientAddress: ClientAddress | null;
  linger: boolean;
  /**
   * Whether the kubelet's eviction manager observes the node (its summary API, as `status` reads it;
   * null: not read, as on a worker), and whether the plan expected it to (localStorageCapacityIsolation).
   */
  eviction: { observing: boolean | null; detail: string; expected: boolean } | null;
}

/** Whether pods see the client's own address through the port driver, per protocol, and why. */
export interface ClientAddress {
  keeps: { tcp: boolean; udp: boolean };
  reasons: string[];
}

/** The one wording of what pods see of a client, for doctor, status and the plan's description. */
export function clientAddressWords(keeps: ClientAddress["keeps"]): string {
  const say = (x: boolean) => (x ? "the client's own address" : "an address of the node");
  return `pods see ${say(keeps.tcp)} over TCP${keeps.tcp ? " (Services with externalTrafficPolicy: Local)" : ""}, ${say(keeps.udp)} over UDP`;
}

/** When an on-demand unit starts, in the words status and doctor show beside it. */
export const WHEN_ADMITTED = "once the node admits another (rootless-k8s token create)";

/** An on-demand unit that is inactive while the node admits no other node is waiting, not down: the one rule status and doctor apply (the units: cli/plan/on-demand.ts). */
export function waitsForNodes(u: { unit: string; activeState: string }, waiting: readonly string[]): boolean {
  return u.activeState === "inactive" && waiting.includes(u.unit);
}

export const nodeChecks: Check<NodeFacts>[] = [
  {
    id: "node-units",
    group: "node",
    label: "units",
    run: (n) => {
      const waits = (u: { unit: string; activeState: string }) => waitsForNodes(u, n.units.waiting ?? []);
      const down = n.units.states.filter((u) => u.activeState !== "active" && !waits(u));
      const waiting = n.units.states.filter(waits).map((u) => u.unit);
      if (!down.length)
        return ok(
          `${n.units.states.length - waiting.length} units active${waiting.length ? `; ${waiting.join(", ")} start ${WHEN_ADMITTED}` : ""}`,
        );
      return fail(down.map((u) => `${u.unit} ${u.activeState}`).join(", "), {
        user: ["rootless-k8s logs", "rootless-k8s start"],
      });
    },
  },
  {
    id: "node-ready",
    group: "node",
    label: "readiness",
    run: (n) =>
      n.ready.api && n.ready.node
        ? ok(`API server ready, node ${n.node} Ready`)
        : fail(n.ready.problems.filter((p) => /API|node|Ready/.test(p)).join("; ") || "not ready", {
            user: ["rootless-k8s status", "rootless-k8s logs kubelet"],
          }),
  },
  {
    id: "node-cgroup",
    group: "node",
    label: "owner cgroup",
    // RootlessKit moves its processes to a leaf below the owner unit's cgroup (--evacuate-cgroup2),
    // and the unit's cgroup passes the controllers down to the node's.
    run: (n) => {
      const c = n.ownerCgroup;
      if (n.mode !== "delegated" || !c) return skip("mode none: the node makes no cgroup writes, by design");
      if (!c.path) return fail(`${n.units.owner} has no cgroup (is it running?)`, { user: ["rootless-k8s start"] });
      if (!c.v2) return fail("the host has no cgroup v2 hierarchy at /sys/fs/cgroup");
      const missing = missingCore(c.controllers);
      if (missing.length) {
        return fail(`${c.path} lacks ${missing.join(", ")} (has: ${c.controllers?.join(" ") || "none"})`, {
          root: delegateFix(null),
          user: ["# then log out and in again, and: rootless-k8s install"],
        });
      }
      const notPassed = DELEGATION_CORE.filter((x) => !c.subtreeControl?.includes(x));
      if (notPassed.length) {
        return fail(`${c.path}/cgroup.subtree_control lacks ${notPassed.join(", ")}: the kubelet cannot create pod cgroups`, {
          user: ["rootless-k8s restart   # RootlessKit's --evacuate-cgroup2 enables them at start"],
        });
      }
      return ok(`${c.path}: controllers ${c.controllers!.join(" ")}, subtree_control ${c.subtreeControl!.join(" ")}`);
    },
  },
  {
    id: "node-snapshotter",
    group: "node",
    label: "snapshotter in use",
    run: (n) => {
      const s = n.snapshotter;
      if (!s.planned) return skip(`${s.runtime}: the storage driver is the runtime's own choice`);
      if (s.error !== null)
        return fail(`the runtime does not answer CRI on ${s.criSocket}: ${s.error}`, { user: ["rootless-k8s logs rootlesskit"] });
      if (!s.used) return warn(`${s.runtime} does not report its snapshotter (planned: ${s.planned})`);
      if (s.used !== s.planned)
        return fail(`${s.runtime} uses ${s.used}, the plan says ${s.planned}`, {
          user: ["rootless-k8s install   # rewrites the runtime's config and restarts it"],
        });
      return ok(`${s.runtime} uses ${s.used}, as planned`);
    },
  },
  {
    id: "node-ports",
    group: "node",
    label: "published ports",
    run: (n) => {
      const answers = n.ports.answers;
      if (!answers) return fail(`cannot read ${n.ports.kubeconfig}`, { user: ["rootless-k8s install"] });
      if (!answers.length) return skip("no port is published");
      const lines = answers.map((a) => `${a.host}:${a.hostPort} → ${a.namespacePort}: ${a.status !== null ? `HTTP ${a.status}` : a.error}`);
      const bad = answers.filter((a) => a.status !== 200).length;
      if (!bad) return ok([...lines, ...(n.nodePorts ? [`Services' NodePorts from ${n.nodePorts}`] : [])].join("; "));
      return fail(`${bad} of ${answers.length} published ports do not answer: ${lines.join("; ")}`, {
        user: ["rootless-k8s logs rootlesskit   # the port driver", "rootless-k8s restart"],
      });
    },
  },
  {
    id: "node-client-address",
    group: "node",
    label: "client address",
    run: (n) =>
      n.clientAddress
        ? ok(clientAddressWords(n.clientAddress.keeps), n.clientAddress.reasons)
        : skip("rootless-k8s publishes no Service port on this node (see the plan's Services line)"),
  },
  {
    id: "node-eviction",
    group: "node",
    label: "eviction",
    run: (n) => {
      const e = n.eviction;
      if (!e || e.observing === null)
        return skip(e ? `not read: ${e.detail}` : "not read on a worker (its credential may not read its kubelet's summary)");
      if (e.observing) return ok(`the eviction manager observes the node: ${e.detail}`);
      // Planned off (no block device under the data folder): what doctor's eviction check said before install.
      if (!e.expected)
        return warn(`${e.detail}; the data folder's file system has no block device, so the plan left it off`, {
          user: ["# reinstall with the data on a file system with a block device (ext4, xfs): rootless-k8s install --prefix DIR"],
        });
      return fail(e.detail, { user: ["rootless-k8s logs kubelet", "rootless-k8s restart"] });
    },
  },
  {
    id: "node-linger",
    group: "node",
    label: "linger",
    run: (n) =>
      n.linger
        ? ok(`linger is on: the node keeps running after ${n.user} logs out, and starts at boot`)
        : warn(`linger is off: the node stops when ${n.user}'s last session ends, and does not start at boot`, {
            root: [lingerFix(n.user)],
          }),
  },
];
