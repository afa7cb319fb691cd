// The iptables back end of NetworkPolicy enforcement (issue 44), pure: the compiled rules
// (netpol-rules.ts) as one `iptables-restore --noflush` transaction for the filter table of the
// node's namespace. One chain per isolated pod and direction (RK8S-NP-I-…, RK8S-NP-E-…), entered
// from RK8S-NETPOL, which three hooks jump to as the first rule of FORWARD, INPUT and OUTPUT (the
// last only for packets whose source is not the node's: RootlessKit's IP_TRANSPARENT connections).
// First, because kube-proxy's KUBE-FORWARD, which it inserts at the top, accepts every masqueraded
// Service packet: each pass puts the hooks first again.
import type { Allow, CompiledRules, IsolatedPod } from "./netpol-rules";

/** The chain the hooks jump to; every other chain of ours starts with CHAIN_PREFIX. */
export const NETPOL_CHAIN = "RK8S-NETPOL";
export const CHAIN_PREFIX = "RK8S-NP-";

/** The hooks, as iptables-save prints them: each is the first rule of its chain. */
export const HOOKS = [
  { chain: "FORWARD", rule: `-A FORWARD -j ${NETPOL_CHAIN}` },
  { chain: "INPUT", rule: `-A INPUT -j ${NETPOL_CHAIN}` },
  { chain: "OUTPUT", rule: `-A OUTPUT -m addrtype ! --src-type LOCAL -j ${NETPOL_CHAIN}` },
] as const;

export function chainOf(iso: Pick<IsolatedPod, "direction" | "id">): string {
  return `${CHAIN_PREFIX}${iso.direction === "ingress" ? "I" : "E"}-${iso.id}`;
}

function match(a: Allow, direction: IsolatedPod["direction"]): string {
  return [
    a.net ? `${direction === "ingress" ? "-s" : "-d"} ${a.net}` : null,
    a.proto ? `-p ${a.proto}` : null,
    a.proto && a.port ? `-m ${a.proto} --dport ${a.port.replace("-", ":")}` : null,
  ]
    .filter(Boolean)
    .join(" ");
}

/** Each chain's rules, the entry chain's first. */
export function iptablesChains(compiled: CompiledRules): Map<string, string[]> {
  const chains = new Map<string, string[]>([[NETPOL_CHAIN, [`-A ${NETPOL_CHAIN} -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`]]]);
  for (const iso of compiled.isolated) {
    const chain = chainOf(iso);
    const who = `${iso.pod} ${iso.direction}`;
    chains
      .get(NETPOL_CHAIN)!
      .push(`-A ${NETPOL_CHAIN} ${iso.direction === "egress" ? "-s" : "-d"} ${iso.ip}/32 -m comment --comment "${who}" -j ${chain}`);
    chains.set(chain, [
      ...iso.allows.map((a) => `-A ${chain}${match(a, iso.direction) ? ` ${match(a, iso.direction)}` : ""} -j RETURN`),
      `-A ${chain} -m comment --comment "${who}: no policy allows it" -j DROP`,
    ]);
  }
  return chains;
}

/** What the filter table holds of ours now, read from `iptables-save -t filter`. */
export interface SavedFilter {
  /** Our chains (the jump chain and the per-pod ones). */
  chains: string[];
  /** Per hook chain, the rules that jump to ours, in order, and whether the first rule of the chain is our hook. */
  hooks: Record<string, { ours: string[]; first: boolean }>;
}

export function parseSavedFilter(text: string): SavedFilter {
  const chains: string[] = [];
  const hooks: SavedFilter["hooks"] = {};
  let inFilter = false;
  const firstSeen = new Set<string>();
  for (const line of text.split("\n")) {
    if (line.startsWith("*")) inFilter = line.trim() === "*filter";
    if (!inFilter) continue;
    const c = /^:(\S+)/.exec(line);
    if (c && (c[1] === NETPOL_CHAIN || c[1]!.startsWith(CHAIN_PREFIX))) chains.push(c[1]!);
    const a = /^-A (\S+) /.exec(line);
    if (!a) continue;
    const hook = HOOKS.find((h) => h.chain === a[1]);
    if (!hook) continue;
    const h = (hooks[hook.chain] ??= { ours: [], first: false });
    const trimmed = line.trim();
    if (trimmed.endsWith(`-j ${NETPOL_CHAIN}`)) h.ours.push(trimmed);
    if (!firstSeen.has(hook.chain)) {
      firstSeen.add(hook.chain);
      h.first = trimmed === hook.rule;
    }
  }
  return { chains, hooks };
}

/**
 * The whole transaction for `iptables-restore --noflush`: our chains declared (which empties them),
 * the hooks put first where they are not (kube-proxy inserts its own at the top when it starts),
 * the rules, and the chains of pods that are gone deleted.
 */
export function restoreText(compiled: CompiledRules, saved: SavedFilter): string {
  const chains = iptablesChains(compiled);
  const wanted = [...chains.keys()];
  const stale = saved.chains.filter((c) => !wanted.includes(c));
  const lines = ["*filter", ...[...wanted, ...stale].map((c) => `:${c} - [0:0]`)];
  for (const hook of HOOKS) {
    const h = saved.hooks[hook.chain];
    if (h && h.first && h.ours.length === 1) continue;
    for (const r of h?.ours ?? []) lines.push(r.replace(/^-A /, "-D "));
    lines.push(hook.rule.replace(/^-A (\S+)/, "-I $1 1"));
  }
  for (const body of chains.values()) lines.push(...body);
  for (const c of stale) lines.push(`-X ${c}`);
  lines.push("COMMIT", "");
  return lines.join("\n");
}

/** The text that removes everything of ours (the hooks first, then the chains). */
export function removalText(saved: SavedFilter): string {
  const lines = ["*filter"];
  for (const h of Object.values(saved.hooks)) for (const r of h.ours) lines.push(r.replace(/^-A /, "-D "));
  for (const c of saved.chains) lines.push(`:${c} - [0:0]`);
  for (const c of saved.chains) lines.push(`-X ${c}`);
  lines.push("COMMIT", "");
  return lines.join("\n");
}
