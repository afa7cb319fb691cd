// Which backend kube-proxy can use on this host: the one rule, below doctor and plan, as for the
// cgroups (host/cgroups.ts). kube-proxy's nftables mode refuses kernels below 5.13 and runs the nft
// command, 1.0.1 or later (kubernetes pkg/proxy/nftables/supported.go getNFTablesInterface,
// pkg/util/kernel/constants.go NFTablesKubeProxyKernelVersion; knftables.New). docs/upstream-notes.md.
import type { Facts } from "./facts";
import { atLeast } from "./parse/versions";

export const NFTABLES_PROXY = { kernel: "5.13", nft: "1.0.1" } as const;

/** Why kube-proxy would refuse its nftables mode on this host, or null when nothing known stops it. */
export function nftablesProxyBlocker(f: Pick<Facts, "kernel" | "runtimes">): string | null {
  const k = f.kernel.version;
  if (k && !atLeast(k.join("."), NFTABLES_PROXY.kernel))
    return `kube-proxy refuses nftables mode below kernel ${NFTABLES_PROXY.kernel} (this kernel is ${f.kernel.release})`;
  const nft = f.runtimes.nft;
  if (!nft) return `kube-proxy's nftables mode runs the nft command (${NFTABLES_PROXY.nft} or later), which is not installed`;
  if (nft.version && !atLeast(nft.version, NFTABLES_PROXY.nft))
    return `kube-proxy's nftables mode needs nft ${NFTABLES_PROXY.nft} or later (found ${nft.version})`;
  return null;
}
