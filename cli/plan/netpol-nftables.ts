// The nftables back end of NetworkPolicy enforcement (issue 44), pure: the compiled rules
// (netpol-rules.ts) as one `nft -f -` transaction that replaces a table of our own in the node's
// namespace, `table ip rootless_k8s_netpol`, for hosts without iptables (kube-proxy uses nftables
// there too). A table of its own needs no place among kube-proxy's rules: an accept in another
// table ends nothing here, and each base chain of ours (forward, input and output at priority
// filter - 10, output only for packets whose source is not the node's) only drops what no policy
// allows. Same chains as the iptables back end: per isolated pod and direction, returning on an
// allowed packet and dropping the rest.
import type { Allow, CompiledRules, IsolatedPod } from "./netpol-rules";

export const NFT_TABLE = "rootless_k8s_netpol";

export function nftChainOf(iso: Pick<IsolatedPod, "direction" | "id">): string {
  return `${iso.direction === "ingress" ? "i" : "e"}_${iso.id}`;
}

function match(a: Allow, direction: IsolatedPod["direction"]): string {
  return [
    a.net ? `ip ${direction === "ingress" ? "saddr" : "daddr"} ${a.net}` : null,
    a.proto ? (a.port ? `${a.proto} dport ${a.port}` : `meta l4proto ${a.proto}`) : null,
  ]
    .filter(Boolean)
    .join(" ");
}

/** The transaction: the table made if absent, deleted (with everything in it) and written anew, atomically. */
export function nftText(compiled: CompiledRules): string {
  const lines = [`add table ip ${NFT_TABLE}`, `delete table ip ${NFT_TABLE}`, `table ip ${NFT_TABLE} {`];
  const entry = ["    ct state established,related return"];
  for (const iso of compiled.isolated) {
    const chain = nftChainOf(iso);
    const who = `${iso.pod} ${iso.direction}`;
    entry.push(`    ip ${iso.direction === "egress" ? "saddr" : "daddr"} ${iso.ip} jump ${chain} comment "${who}"`);
    lines.push(`  chain ${chain} {`);
    for (const a of iso.allows) lines.push(`    ${[match(a, iso.direction), "return"].filter(Boolean).join(" ")}`);
    lines.push(`    drop comment "${who}: no policy allows it"`, "  }");
  }
  lines.push("  chain netpol {", ...entry, "  }");
  for (const [hook, cond] of [
    ["forward", ""],
    ["input", ""],
    ["output", "fib saddr type != local "],
  ] as const)
    lines.push(`  chain ${hook} {`, `    type filter hook ${hook} priority filter - 10; policy accept;`, `    ${cond}jump netpol`, "  }");
  lines.push("}", "");
  return lines.join("\n");
}

/** The transaction that removes our table, whether or not it is there. */
export function nftRemovalText(): string {
  return `add table ip ${NFT_TABLE}\ndelete table ip ${NFT_TABLE}\n`;
}
