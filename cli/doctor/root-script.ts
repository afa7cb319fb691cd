// The one reviewed root script: every root-side fix of every check that did not pass, in check
// order, each command once, with the reloads (sysctl --system, daemon-reload, ...) run once at the
// end. Printed, never executed: `rootless-k8s doctor --root-script | sudo sh`.
import type { CheckOutcome } from "./check";
import type { Facts } from "../host/facts";

/** Commands that apply what earlier lines wrote: moved to the end, run once. */
const RELOADS = [/^sysctl --system\b/, /^systemctl daemon-reload$/];

export function rootScript(outcomes: readonly CheckOutcome[], facts: Facts): string {
  const lines: string[] = [];
  const reloads: string[] = [];
  const from: string[] = [];
  for (const o of outcomes) {
    if (o.status === "ok" || o.status === "skip" || !o.fix?.root.length || o.rootFixInScript === false) continue;
    const real = o.fix.root.filter((c) => !c.startsWith("#"));
    if (!real.length) continue;
    from.push(o.id);
    for (const cmd of real) {
      const bucket = RELOADS.some((r) => r.test(cmd)) ? reloads : lines;
      if (!bucket.includes(cmd)) bucket.push(cmd);
    }
  }
  const head = [
    "#!/bin/sh",
    `# rootless-k8s doctor: root-side fixes for ${facts.user.name} (uid ${facts.user.uid}) on ${facts.distro.prettyName ?? facts.distro.id}.`,
    "# Review it, then run it as root: rootless-k8s doctor --root-script | sudo sh",
  ];
  if (facts.user.uid === 0)
    return [
      ...head,
      "# Nothing to fix for root itself: the node runs as an ordinary user.",
      "# Run: rootless-k8s doctor --user NAME --root-script, for the user who will run the node.",
      "",
    ].join("\n");
  if (!from.length) return [...head, "# Nothing to fix as root.", ""].join("\n");
  return [
    ...head,
    `# Fixes for: ${from.join(", ")}`,
    "set -eu",
    "",
    ...lines,
    ...reloads,
    "",
    `echo "rootless-k8s: root-side fixes applied; now run: rootless-k8s doctor (as ${facts.user.name})"`,
    "",
  ].join("\n");
}
