// Whether RootlessKit can drive the host's pasta: the one rule, below doctor and plan, as for
// kube-proxy's backend (host/kube-proxy.ts). RootlessKit's pasta driver needs passt 2023_12_04 or
// later (RootlessKit docs/network.md; Docker's rootless docs say the same). Measured here: Debian
// 12's 2023_03_09 forwards no port at all when RootlessKit keeps the namespace off the host's
// loopback (--disable-host-loopback, which the node always sets), and every port without it.
import type { PastaFacts } from "./facts";
import { atLeast } from "./parse/versions";

export const PASTA_FOR_ROOTLESSKIT = "2023_12_04";

/** Why RootlessKit's pasta driver would not work with this pasta, or null when it will. */
export function pastaBlocker(p: PastaFacts): string | null {
  if (p.version && atLeast(p.version.replaceAll("_", "."), PASTA_FOR_ROOTLESSKIT.replaceAll("_", "."))) return null;
  // --host-lo-to-ns-lo arrived in passt 2024_10_30: newer than the floor, whatever --version said.
  if (p.hostLoToNsLo) return null;
  const which = p.version ? `pasta ${p.version}` : `pasta at ${p.path} (it prints no version and lacks --host-lo-to-ns-lo of 2024_10_30)`;
  return `${which} is older than ${PASTA_FOR_ROOTLESSKIT}, which RootlessKit's pasta driver needs: an older pasta forwards no port while the node keeps pods off the host's loopback`;
}
