// The NetworkPolicy enforcer's own files, from the plan (pure): the config `rootless-k8s netpol run
// --config FILE` reads, and its RBAC. It runs on every node with the kubelet's credential
// (system:node:NAME, group system:nodes), so a worker needs nothing of its own: the ClusterRole
// (read pods, namespaces and NetworkPolicies; write Events on a policy it cannot fully enforce) is
// bound to the group system:nodes by the control plane.
import type { NetworkPolicyBackend } from "../plan/network-policy";
import type { Plan } from "../plan/plan";
import { type KubeObject, rbacBinding } from "./kube-objects";
import { layout } from "./layout";

export const NETPOL_ROLE = "rootless-k8s:network-policy";

/** What `netpol run` needs, written to config/netpol.json (a change restarts the unit). */
export interface NetworkPolicyConfig {
  kubeconfig: string;
  /** The node whose pods it enforces for, and the source of its Events. */
  nodeName: string;
  /** What its last pass did, for `status` (in the runtime folder). */
  stateFile: string;
  /** The tool it writes the rules with (the plan's, kube-proxy's). */
  backend: NetworkPolicyBackend;
}

export function networkPolicyConfig(plan: Plan): NetworkPolicyConfig {
  if (!plan.networkPolicy?.enforced) throw new Error("the plan enforces no NetworkPolicy");
  const l = layout(plan);
  return {
    kubeconfig: l.kubeconfigs.kubelet,
    nodeName: plan.node.name,
    stateFile: l.run.networkPolicyState,
    backend: plan.networkPolicy.backend ?? "iptables",
  };
}

export function renderNetworkPolicyConfig(plan: Plan): string {
  return `${JSON.stringify(networkPolicyConfig(plan), null, 2)}\n`;
}

/** The enforcer's RBAC: as little as it uses, for every node. */
export function networkPolicyObjects(labels: Record<string, string>): KubeObject[] {
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: NETPOL_ROLE, labels },
      rules: [
        { apiGroups: [""], resources: ["pods", "namespaces"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: ["get", "list", "watch"] },
        { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
      ],
    },
    rbacBinding(
      NETPOL_ROLE,
      labels,
      { kind: "ClusterRole", name: NETPOL_ROLE },
      { apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "system:nodes" },
    ),
  ];
}
