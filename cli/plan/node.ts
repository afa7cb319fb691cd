// The node object: its name, and the honest label (and optional taint) of a node without limits.
import { ExitCode, UserError } from "../errors";
import type { Facts } from "../host/facts";
import { refuseControl } from "./paths";
import { IPV4 } from "../host/parse/cluster-parameters";
import type { Mode, NetworkPlan, NodePlan, Plan, PlanOptions } from "./plan";

/** Set on every `none` node: schedulers and people can see it enforces no resource limits. */
export const RESOURCE_ISOLATION_LABEL = "rootless-k8s.io/resource-isolation";
export const MODE_LABEL = "rootless-k8s.io/mode";

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A host name as a valid node name: lower case, no characters Kubernetes refuses. */
export function nodeNameFrom(hostname: string): string {
  return hostname
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, "-")
    .replace(/^[-.]+|[-.]+$/g, "")
    .slice(0, 253);
}

export function decideNode(facts: Facts, mode: Mode, options: PlanOptions): NodePlan {
  if (options.nodeName !== undefined)
    refuseControl("--node-name", options.nodeName, ExitCode.Usage, "pass --node-name NAME with lower-case letters, digits, '-' and '.'");
  const name = options.nodeName ?? nodeNameFrom(facts.network.hostname ?? "");
  if (!name || name.length > 253 || !DNS1123_SUBDOMAIN.test(name)) {
    throw new UserError(
      options.nodeName
        ? `--node-name "${options.nodeName}" is not a valid node name`
        : `the host name "${facts.network.hostname ?? ""}" gives no valid node name`,
      { exitCode: ExitCode.Refused, fix: "pass --node-name NAME with lower-case letters, digits, '-' and '.'" },
    );
  }
  const labels: Record<string, string> = { [MODE_LABEL]: mode };
  const taints: NodePlan["taints"] = [];
  if (mode === "none") {
    labels[RESOURCE_ISOLATION_LABEL] = "none";
    if (options.taintNone) taints.push({ key: RESOURCE_ISOLATION_LABEL, value: "none", effect: "NoSchedule" });
  } else if (options.taintNone) {
    throw new UserError("--taint-none applies to mode none only, and this node is delegated", {
      exitCode: ExitCode.Usage,
      fix: "drop --taint-none, or add --mode none",
    });
  }
  return { name, labels, taints };
}

/**
 * --node-ip on install: one of the host's own addresses (the other hosts reach this one there, and
 * the overlay's UDP port is published on it); not for the docker runtime, whose namespace is
 * dockerd's. Undefined when not asked for: the node keeps the namespace's address.
 */
export function decideNodeIP(nodeIP: string | undefined, hostAddresses: readonly string[], network: NetworkPlan): string | undefined {
  if (nodeIP === undefined) return undefined;
  const fix = `pass one of this host's addresses: --node-ip ${hostAddresses[0] ?? "A.B.C.D"}`;
  if (!IPV4.test(nodeIP)) throw new UserError(`--node-ip ${nodeIP} is not an IPv4 address`, { exitCode: ExitCode.Usage, fix });
  if (network.driver === "docker")
    throw new UserError("--node-ip does not apply to --runtime docker: the node lives in dockerd's namespace", {
      exitCode: ExitCode.Refused,
      fix: "drop --node-ip",
    });
  if (!hostAddresses.includes(nodeIP))
    throw new UserError(`--node-ip ${nodeIP} is not an address of this host (${hostAddresses.join(", ") || "none but loopback"})`, {
      exitCode: ExitCode.Refused,
      fix,
    });
  return nodeIP;
}

/** The address the node advertises: plan.node.ip, a worker's join address (older plans), else the namespace's own. */
export function advertisedIP(plan: Pick<Plan, "node" | "join" | "network">): string {
  return plan.node.ip ?? plan.join?.nodeIP ?? plan.network.namespaceIP;
}
