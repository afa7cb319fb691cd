// doctor's text report: checks grouped, one line each with the fix under it (root and user kept
// apart), then the verdict and what `none` gives up. Colour comes from the Style (TTY only).
import type { Style } from "../ui/output";
import type { Facts } from "../host/facts";
import type { Group, Status } from "./check";
import type { Diagnosis } from "./index";
import { showOutcomes } from "./present";

const GROUP_TITLES: Record<Group, string> = {
  host: "Host",
  user: "User",
  userns: "User namespaces",
  cgroup: "cgroups",
  systemd: "systemd",
  kernel: "Kernel",
  network: "Ports and disk",
  runtimes: "Container tools",
  node: "Node",
  join: "Join",
};

export function renderReport(facts: Facts, d: Diagnosis, s: Style): string {
  const lines: string[] = [];
  const who = `${facts.user.name} (uid ${facts.user.uid})`;
  lines.push(
    s.bold(
      `rootless-k8s doctor: ${facts.distro.prettyName ?? facts.distro.id}, kernel ${facts.kernel.release}, ${facts.arch}, user ${who}`,
    ),
  );
  const width = Math.max(...d.outcomes.map((o) => o.label.length));
  for (const group of Object.keys(GROUP_TITLES) as Group[]) {
    const items = d.outcomes.filter((o) => o.group === group);
    if (!items.length) continue;
    lines.push("", s.bold(GROUP_TITLES[group]));
    lines.push(...showOutcomes(items, s, { width }));
  }
  if (facts.notes.length) {
    lines.push("", s.bold("Not determined"));
    for (const n of facts.notes) lines.push(`  - ${n}`);
  }
  const counts = (st: Status) => d.outcomes.filter((o) => o.status === st).length;
  lines.push("", `${counts("ok")} ok, ${counts("warn")} warnings, ${counts("fail")} failed, ${counts("skip")} skipped`);
  const colour = d.mode === "blocked" ? s.red : d.mode === "none" ? s.yellow : s.green;
  const meaning =
    d.mode === "blocked"
      ? "no rootless node can run here until the blocking failures are fixed"
      : d.mode === "none"
        ? "the node runs without cgroup control"
        : "the node runs with real per-pod limits";
  lines.push("", `${s.bold("Verdict:")} ${colour(d.mode)}: ${meaning}`);
  for (const r of d.reasons) lines.push(`  - ${r}`);
  if (d.givesUp.length) {
    lines.push("", "In mode none the node gives up:");
    for (const g of d.givesUp) lines.push(`  - ${g}`);
  }
  const rootFixes = d.outcomes.some(
    (o) => (o.status === "fail" || o.status === "warn") && o.fix?.root.some((c) => !c.startsWith("#")) && o.rootFixInScript !== false,
  );
  const forUser = facts.user.evaluatedOther ? ` --user ${facts.user.name}` : "";
  if (rootFixes && facts.user.uid !== 0)
    lines.push("", `All root-side fixes at once, after review: ${s.cyan(`rootless-k8s doctor${forUser} --root-script | sudo sh`)}`);
  return lines.join("\n");
}
