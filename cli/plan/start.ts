// How the node's units start (issue 41): each unit that needs a peer to be ready waits for it in a
// bounded `ExecStartPre=rootless-k8s wait ...`, rather than starting, failing and being restarted
// by systemd (which counts against its start limit). One rule for every unit:
//   - the API server waits for etcd (its /health, with the API server's own etcd client certificate);
//   - on the control-plane node, everything that talks to the API server (controller-manager,
//     scheduler, kubelet, kube-proxy, the port publisher, the overlay agent, the CSR approver) waits
//     for its /readyz, which is ok only once its bootstrap hooks (RBAC roles and bindings, the
//     priority classes, the extension-apiserver-authentication ConfigMap) have run (on a node
//     bootstrapped at the server's version, all but the controller-manager without the two hooks
//     that poll once a second: cli/readiness/bootstrap.ts);
//   - a worker's units wait for nothing: its API server is another host's, which may be down for
//     longer than any bound, and its kubelet retries by itself.
// Pure: the units renderer turns a gate into its command line.
import type { Plan } from "./plan";

/**
 * `skipPolledHooks`: on a node bootstrapped at the API server's version, wait for /readyz without
 * the two bootstrap hooks that poll once a second (cli/readiness/bootstrap.ts). Not for
 * kube-controller-manager: it gives the API server's /healthz, which counts every bootstrap hook, 10 s
 * from its own start and exits after (WaitForAPIServer, k8s.io/controller-manager app/helper.go);
 * on a slow machine (the emulated VM) the hooks took longer, and systemd restarted it on every start.
 */
export type StartGate = { kind: "etcd" } | { kind: "api"; skipPolledHooks: boolean };

/**
 * How long a gate waits before it gives up (the unit then fails and systemd restarts it once more):
 * longer than the API server's start on the slowest machine measured (an emulated VM: about 60 s
 * from etcd to /readyz ok), shorter than the start timeout the unit gets (GATE_TIMEOUT_S + 30).
 */
export const GATE_TIMEOUT_S = 240;

/**
 * Start rate limit of every component unit: systemd refuses a unit's 11th start within 60 s. A
 * component that keeps crashing (RestartSec=3) hits it after about 30 s and stays failed, named by
 * `status`; normal use never comes near it, since no unit fails a normal start any more and
 * `rootless-k8s start` clears the count (reset-failed) before it starts the node. Measured: a stop
 * and start cycle takes more than 3 s, so even 10 back-to-back `systemctl --user restart`s of the
 * target in a minute stay within it.
 */
export const START_LIMIT = { intervalSec: 60, burst: 10 } as const;

/** The gate of one unit, or null when it waits for nothing. */
export function startGate(plan: Plan, unit: string): StartGate | null {
  const u = plan.units;
  if (plan.role === "worker") return null;
  if (unit === u.apiServer) return { kind: "etcd" };
  const talksToApi = [u.controllerManager, u.scheduler, u.kubelet, u.kubeProxy, u.ports, u.overlay, u.networkPolicy, u.csrApprover];
  return talksToApi.includes(unit) ? { kind: "api", skipPolledHooks: unit !== u.controllerManager } : null;
}
