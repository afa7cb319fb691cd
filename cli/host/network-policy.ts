// Whether this host lets the node enforce NetworkPolicies (issue 44): the one rule, below doctor
// and plan, as for kube-proxy's backend (host/kube-proxy.ts). The enforcer writes its rules inside
// the node's namespace with the host's iptables-restore, or nft where there is no iptables, and
// packets between two pods on the node's bridge reach those rules only through br_netfilter, which
// a user cannot load.
import type { Facts } from "./facts";

export type NetworkPolicyNeed = "iptables" | "br_netfilter";

/** What stops enforcement on this host, or null when nothing known does. */
export function networkPolicyHostBlocker(f: Pick<Facts, "runtimes" | "features">): { why: string; needs: NetworkPolicyNeed } | null {
  if (!f.runtimes.iptables?.path && !f.runtimes.nft)
    return {
      why: "neither iptables nor nft is installed: the enforcer writes its rules with one of them in the node's namespace",
      needs: "iptables",
    };
  if (f.features.modules.br_netfilter === "missing")
    return {
      why: "br_netfilter is not loaded: packets between two pods on the node's bridge skip iptables, so no policy could hold between them",
      needs: "br_netfilter",
    };
  return null;
}
