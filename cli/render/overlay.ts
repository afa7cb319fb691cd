// The overlay agent's config (pure): what `rootless-k8s overlay run --config FILE` reads: the
// kubelet's kubeconfig (the agent acts as the node: system:node), RootlessKit's API socket, the
// node's name and this host's address, the device's settings and the cluster's pod network.
import * as path from "node:path";
import { advertisedIP } from "../plan/node";
import type { Plan } from "../plan/plan";
import { layout } from "./layout";

export interface OverlayConfig {
  kubeconfig: string;
  rootlesskitSocket: string;
  nodeName: string;
  /** The host address the other nodes send this node's VXLAN packets to; null when the host has none. */
  publicIP: string | null;
  device: string;
  vni: number;
  port: number;
  mtu: number;
  /** The cluster's pod network (every node's range is in it). */
  pods: string;
  /** Where RootlessKit delivers the UDP port inside the namespace: the node's own address. */
  childIP: string;
  /** The kubelet's port, which every node listens on inside its namespace: each peer's VTEP is probed there. */
  probePort: number;
  /** What the last pass found (overlay-state.json in the runtime folder). */
  stateFile: string;
}

export function overlayConfig(plan: Plan): OverlayConfig {
  const o = plan.overlay;
  if (!o?.enabled) throw new Error("the plan has no overlay");
  return {
    kubeconfig: layout(plan).kubeconfigs.kubelet,
    rootlesskitSocket: path.join(plan.paths.rootlesskitStateDir, "api.sock"),
    nodeName: plan.node.name,
    // The advertised host address; a single node advertising its namespace's: the host's first.
    publicIP: advertisedIP(plan) !== plan.network.namespaceIP ? advertisedIP(plan) : (plan.pki.hostAddresses[0] ?? null),
    device: o.device,
    vni: o.vni,
    port: o.port,
    mtu: o.mtu,
    pods: plan.cidrs.pods,
    childIP: plan.network.namespaceIP,
    probePort: plan.ports.kubelet,
    stateFile: layout(plan).run.overlayState,
  };
}

export function renderOverlayConfig(plan: Plan): string {
  return `${JSON.stringify(overlayConfig(plan), null, 2)}\n`;
}
