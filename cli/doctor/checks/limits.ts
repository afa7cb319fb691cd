// The per-user limits a full node meets (issue 45), in one place: every process, thread and key of
// the node and its pods is charged to the user's one uid. For each limit, the pods it allows beside
// the node itself, the lowest named first, with the fix; the kubelet runs at most 110.
import type { Facts, UserLimitFacts } from "../../host/facts";
import { fail, ok, skip, warn, type Check, type CheckResult } from "../check";
import { sysctlFix } from "../fixes";

/** The kubelet's default maxPods, which the plan keeps unless the user's limits allow fewer pods. */
export const KUBELET_MAX_PODS = 110;

/** The add-ons' pods (CoreDNS, local-path-provisioner, metrics-server): a node that cannot hold them is no use. */
export const ADDON_PODS = 3;

/**
 * What a node and its pods hold, measured by the e2e's scale scenario on the host route
 * (2026-12-06; containerd 2.3.7 and crun, mode none, 107 busybox `sleep` pods): the user's threads
 * 175 with the node idle, 1698 with the pods, so 14.2 per pod (a pod's pause, its container and
 * their runtime shim); inotify instances and watches did not grow with pods (23 and 47); keys stayed
 * at 4 (containerd's runtimes run with NoNewKeyring: no session keyring per container).
 */
export const MEASURED = { nodeThreads: 175, threadsPerPod: 14.2, nodeKeys: 4 } as const;

/**
 * A runtime that gives every container a session keyring of its own (CRI-O and dockerd: runc and
 * crun without --no-new-keyring) charges one key per container to the user: a pod's pause container
 * and one container take 2 (keyrings(7); containers/podman#13363).
 */
export const KEYS_PER_POD_WITH_KEYRINGS = 2;

interface Allowance {
  what: string;
  /** Pods this limit allows beside the node; null: it does not bound pods. */
  pods: number | null;
  words: string;
  fix?: { root?: string[]; user?: string[] };
}

/**
 * The lowest bound on the user's tasks (processes and threads): RLIMIT_NPROC (ulimit -u) or the
 * cgroup's pids.max over the user's slices and manager (every task of the node counts there, in
 * either mode); "unlimited" when neither bounds them, null when neither could be read.
 */
function taskLimit(l: UserLimitFacts): { max: number; words: string; fix: Allowance["fix"] } | "unlimited" | null {
  const limits: { max: number; words: string; fix: Allowance["fix"] }[] = [];
  if (typeof l.nproc === "number")
    limits.push({
      max: l.nproc,
      words: `ulimit -u ${l.nproc}`,
      fix: {
        root: ["printf '%s\\n' '@USER soft nproc 65536' '@USER hard nproc 65536' > /etc/security/limits.d/60-rootless-k8s.conf"],
        user: ["# then log in again (the limit is set at login)"],
      },
    });
  if (l.pidsMax)
    limits.push({
      max: l.pidsMax.max,
      words: `pids.max ${l.pidsMax.max} of ${l.pidsMax.cgroup}`,
      fix: { root: [`systemctl set-property ${l.pidsMax.cgroup} TasksMax=infinity`] },
    });
  const lowest = limits.sort((a, b) => a.max - b.max)[0];
  if (lowest) return lowest;
  return l.nproc === "unlimited" ? "unlimited" : null;
}

function threads(l: UserLimitFacts): Allowance | null {
  const limit = taskLimit(l);
  if (limit === null) return null;
  const inUse = l.threads ?? 0;
  if (limit === "unlimited")
    return { what: "processes and threads", pods: null, words: `processes and threads: ulimit -u unlimited (${inUse} in use)` };
  // The node's own threads count too when it is not running yet (they are in `inUse` when it is).
  const free = limit.max - Math.max(inUse, MEASURED.nodeThreads);
  const pods = Math.max(0, Math.floor(free / MEASURED.threadsPerPod));
  return {
    what: "processes and threads",
    pods,
    words: `processes and threads: ${limit.words}, ${inUse} in use: about ${pods} pods (${MEASURED.threadsPerPod} threads each, measured)`,
    fix: limit.fix,
  };
}

function keys(l: UserLimitFacts, f: Facts): Allowance | null {
  if (!l.keys) return null;
  const { used, max } = l.keys;
  const pods = Math.max(0, Math.floor((max - used) / KEYS_PER_POD_WITH_KEYRINGS));
  const keyringRuntimes = [f.runtimes.crio ? "CRI-O" : null, f.runtimes.docker?.serverReachable ? "Docker" : null].filter(Boolean);
  const words = `keys: ${used} of ${max} (kernel.keys.maxkeys): none per pod with containerd, the default (no session keyring per container); about ${pods} pods with CRI-O or Docker`;
  // Only a runtime this host offers can meet this bound.
  return {
    what: "keys",
    pods: keyringRuntimes.length ? pods : null,
    words,
    fix: { root: sysctlFix("60-rootless-k8s-keys", { "kernel.keys.maxkeys": 2000, "kernel.keys.maxbytes": 50000 }) },
  };
}

/**
 * The pods the user's limits allow a node running `runtime`, from the limits alone (not from what is
 * in use now, which a running node's own pods would lower): the kubelet's maxPods when it is below
 * its default of 110 (cli/plan/kubelet.ts), so a pod past it waits as "Too many pods" instead of
 * failing to start. Null when nothing bounds pods below 110.
 */
export function podBoundOfLimits(l: UserLimitFacts | undefined, runtime: string): { pods: number; words: string } | null {
  if (!l) return null;
  const bounds: { pods: number; words: string }[] = [];
  const tasks = taskLimit(l);
  if (tasks !== null && tasks !== "unlimited") {
    const pods = Math.floor((tasks.max - MEASURED.nodeThreads) / MEASURED.threadsPerPod);
    bounds.push({
      pods,
      words: `${tasks.words} allows about ${pods} pods (the node's ${MEASURED.nodeThreads} threads, ${MEASURED.threadsPerPod} per pod, measured)`,
    });
  }
  if (l.keys && (runtime === "crio" || runtime === "docker")) {
    const pods = Math.floor((l.keys.max - MEASURED.nodeKeys) / KEYS_PER_POD_WITH_KEYRINGS);
    bounds.push({
      pods,
      words: `kernel.keys.maxkeys ${l.keys.max} allows about ${pods} pods (${runtime === "crio" ? "CRI-O" : "Docker"} keeps a session keyring per container: ${KEYS_PER_POD_WITH_KEYRINGS} keys a pod)`,
    });
  }
  const lowest = bounds.sort((a, b) => a.pods - b.pods)[0];
  return lowest && lowest.pods < KUBELET_MAX_PODS ? { pods: Math.max(1, lowest.pods), words: lowest.words } : null;
}

export function podLimitsResult(f: Facts): CheckResult {
  const l = f.limits;
  if (!l) return skip("not read");
  const all = [threads(l), keys(l, f)].filter((a): a is Allowance => a !== null);
  if (!all.length) return skip("the per-user limits cannot be read here");
  const bounded = all.filter((a) => a.pods !== null).sort((a, b) => (a.pods as number) - (b.pods as number));
  const lowest = bounded[0];
  const lines = [...bounded, ...all.filter((a) => a.pods === null)].map((a) => a.words);
  const instead = (s: string) => s.replaceAll("@USER", f.user.name);
  const fix = lowest && { root: lowest.fix?.root?.map(instead) ?? [], user: lowest.fix?.user ?? [] };
  if (lowest && fix && (lowest.pods as number) < ADDON_PODS) {
    return fail(
      `${lowest.what} allow about ${lowest.pods} pods beside the node: not even its ${ADDON_PODS} add-on pods (DNS, storage, metrics) fit; ${lines.join("; ")}`,
      fix,
    );
  }
  if (lowest && fix && (lowest.pods as number) < KUBELET_MAX_PODS) {
    return warn(
      `${lowest.what} allow about ${lowest.pods} pods, fewer than the kubelet's ${KUBELET_MAX_PODS}: the plan sets maxPods to that for the runtime it bounds, so further pods wait as "Too many pods"; ${lines.join("; ")}`,
      fix,
    );
  }
  return ok(
    `the kubelet's ${KUBELET_MAX_PODS} pods fit${lowest ? ` (first bound: ${lowest.what}, about ${lowest.pods} pods)` : ""}; ${lines.join("; ")}`,
  );
}

export const limitChecks: Check[] = [{ id: "pod-limits", group: "kernel", label: "per-user limits", run: podLimitsResult }];
