// Whether the node enforces NetworkPolicies (issue 44), and how: rootless-k8s-netpol.service runs
// `rootless-k8s netpol run` inside the node's namespaces, which compiles the cluster's policies into
// iptables rules for this node's pods (cli/plan/netpol-rules.ts). Pure: host facts and the user's
// choice in, the decision and its reasons out. Where the host cannot enforce, the plan says why and
// how to fix it, doctor says the same, and `status` shows `network policy: not enforced (reason)`:
// a policy that is accepted and silently ignored is what this replaces.
//
// The rules are written with kube-proxy's tool: iptables where the host has it, else nftables.
//
// Why our own enforcer, not kube-network-policies or kube-router (docs/network-policy.md):
// kube-network-policies sends each new connection to user space through nftables' `queue`
// statement, which needs CONFIG_NFT_QUEUE (absent from this project's CI kernel, so the e2e could
// not prove it); kube-router's controller needs the ipset command on the host (a package few hosts
// carry) and the newest release the Go module proxy serves is reported with security flaws; both
// are a second Go program. The rules are the same filter-table design as kube-router's.
import type { Facts } from "../host/facts";
import { networkPolicyHostBlocker } from "../host/network-policy";
import { networkPolicyFix } from "../doctor/fixes";
import type { PlanOptions, ProxyMode, Reasoned, RuntimeName } from "./plan";

export const NETPOL_UNIT = "rootless-k8s-netpol.service";

/** The tool the rules are written with: kube-proxy's (iptables where the host has it, else nftables). */
export type NetworkPolicyBackend = "iptables" | "nftables";

export interface NetworkPolicyPlan extends Reasoned {
  enforced: boolean;
  /** Absent from plans written before the nftables back end (iptables). */
  backend?: NetworkPolicyBackend;
  /** Why not, in a phrase (status and doctor print it); null when enforced. */
  why: string | null;
  /** What makes it enforced: root's commands, or the user's. */
  fix: { root?: string[]; user?: string } | null;
}

/** The reason a node of this runtime on this host cannot enforce policies, with its fix; null when nothing known stops it. */
export function networkPolicyBlocker(facts: Facts, runtime: RuntimeName): { why: string; fix: NetworkPolicyPlan["fix"] } | null {
  if (runtime === "docker")
    return {
      why: "the pods live in rootless Docker's network namespace, whose filter table dockerd keeps: rootless-k8s does not enforce policies there",
      fix: { user: "install with --runtime containerd (the default) or cri-o for NetworkPolicies to hold" },
    };
  const b = networkPolicyHostBlocker(facts);
  return b ? { why: b.why, fix: networkPolicyFix(facts, b.needs) } : null;
}

export function decideNetworkPolicy(
  facts: Facts,
  options: Pick<PlanOptions, "networkPolicy">,
  runtime: RuntimeName,
  proxy: ProxyMode,
): NetworkPolicyPlan {
  if (options.networkPolicy === false)
    return {
      enforced: false,
      why: "turned off with --no-network-policy",
      fix: { user: "re-run `rootless-k8s install` without --no-network-policy" },
      reasons: ["off (--no-network-policy): NetworkPolicies are accepted by the API server and not enforced; `status` says so"],
    };
  const blocker = networkPolicyBlocker(facts, runtime);
  if (blocker)
    return {
      enforced: false,
      ...blocker,
      reasons: [`not enforced: ${blocker.why}; \`status\` and doctor say so`],
    };
  const backend: NetworkPolicyBackend = proxy;
  return {
    enforced: true,
    backend,
    why: null,
    fix: null,
    reasons: [
      backend === "iptables"
        ? `${NETPOL_UNIT} (\`rootless-k8s netpol run\`, inside the node's namespaces) compiles every NetworkPolicy into iptables rules for this node's pods, first in FORWARD and INPUT, ahead of kube-proxy's; replies and the node's own traffic (the kubelet's probes) pass`
        : `${NETPOL_UNIT} (\`rootless-k8s netpol run\`, inside the node's namespaces) compiles every NetworkPolicy into an nftables table of its own (ip rootless_k8s_netpol) for this node's pods, as kube-proxy uses nftables on this host; replies and the node's own traffic (the kubelet's probes) pass`,
      "a pod that a policy selects loses what its policies do not allow, in each direction the policy names (Ingress, Egress); removing the policy restores it within a second",
    ],
  };
}

/** A plan without the field (older receipts) enforced nothing. */
export function networkPolicyOf(plan: { networkPolicy?: NetworkPolicyPlan }): NetworkPolicyPlan {
  return (
    plan.networkPolicy ?? {
      enforced: false,
      why: "installed by a release without NetworkPolicy enforcement",
      fix: { user: "re-run `rootless-k8s install` (or upgrade)" },
      reasons: [],
    }
  );
}
