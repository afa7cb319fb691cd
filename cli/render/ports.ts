// The port publisher's own files, from the plan (pure): the config `rootless-k8s ports run --config
// FILE` reads (where the API server, RootlessKit's API and the state file are, and the decisions of
// plan.publish), and its RBAC: a ClusterRole that reads Services and pods, writes a LoadBalancer's
// status and creates Events, bound to the user of its own client certificate (no system:masters).
import * as path from "node:path";
import type { Plan } from "../plan/plan";
import { type KubeObject, rbacBinding } from "./kube-objects";
import { layout } from "./layout";

/** The client certificate's CN: the RBAC user. Without `system:`, a prefix Kubernetes keeps for its own components. */
export const PORTS_USER = "rootless-k8s-ports";
export const PORTS_ROLE = "rootless-k8s:ports";

/** What `ports run` needs, written to config/ports.json (a change restarts the ports unit). */
export interface PortsConfig {
  /** Its kubeconfig: its own client certificate, the API server through the host's published port. */
  kubeconfig: string;
  /** RootlessKit's API socket (<state-dir>/api.sock). */
  rootlesskitSocket: string;
  bindAddress: "0.0.0.0" | "127.0.0.1";
  /** Where RootlessKit connects inside the namespace: the node's own address. */
  childIP: string;
  /** Host ports the node publishes itself (the API server's, the overlay's): never wanted, never removed. */
  reserved: number[];
  /** status.loadBalancer.ingress of LoadBalancer Services; empty: not written by this node (a worker). */
  ingressIPs: string[];
  /** What it published, skipped and could not publish, for `status` (in the runtime folder). */
  stateFile: string;
  /** The node's name, as the source of the Events it writes. */
  nodeName: string;
}

export function portsConfig(plan: Plan): PortsConfig {
  const p = plan.publish;
  if (!p?.enabled) throw new Error("the plan publishes no ports");
  const l = layout(plan);
  const reserved = [...plan.network.published.map((x) => x.hostPort), ...(plan.overlay?.enabled ? [plan.overlay.port] : [])];
  return {
    // A worker's publisher uses the kubelet's own credential (system:node), as its overlay does.
    kubeconfig: plan.role === "worker" ? l.kubeconfigs.kubelet : l.kubeconfigs.ports,
    rootlesskitSocket: path.join(plan.paths.rootlesskitStateDir, "api.sock"),
    bindAddress: p.bindAddress,
    childIP: p.childIP,
    reserved: [...new Set(reserved)].sort((a, b) => a - b),
    ingressIPs: p.ingressIPs,
    stateFile: l.run.portsState,
    nodeName: plan.node.name,
  };
}

export function renderPortsConfig(plan: Plan): string {
  return `${JSON.stringify(portsConfig(plan), null, 2)}\n`;
}

/** The RBAC of the port publisher: as little as it uses. */
export function portsObjects(labels: Record<string, string>): KubeObject[] {
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: PORTS_ROLE, labels },
      rules: [
        { apiGroups: [""], resources: ["services", "pods"], verbs: ["get", "list", "watch"] },
        // status.loadBalancer.ingress of LoadBalancer Services.
        { apiGroups: [""], resources: ["services/status"], verbs: ["update", "patch"] },
        // An Event on the Service or pod whose port could not be published.
        { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
      ],
    },
    rbacBinding(
      PORTS_ROLE,
      labels,
      { kind: "ClusterRole", name: PORTS_ROLE },
      { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: PORTS_USER },
    ),
  ];
}
