// `status` in words: one block a person can read at a glance, problems first.
import { WHEN_ADMITTED, waitsForNodes } from "../doctor/checks/node";
import type { Style } from "../ui/output";
import type { UserLimitFacts } from "../host/facts";
import { clientAddressWords } from "../doctor/checks/node";
import type { PortsStatus } from "./ports-status";
import type { NodeStatus } from "./status";

const pad = (label: string) => `  ${label.padEnd(11)} `;

/** Every published port with its owner, then each port not published with why, and what pods see of the client. */
export function portsLines(p: PortsStatus, own: NodeStatus["ports"], s: Style): string[] {
  const lines: string[] = [];
  const planned = own.map((x) => `${x.hostIP}:${x.hostPort} → ${x.namespacePort}/${x.protocol}`).join(", ") || "none";
  if (!p.publisher?.enabled || p.published === null) {
    lines.push(`${pad("ports")}${planned}${p.publisher?.enabled ? s.yellow(` (publisher: ${p.detail ?? "no answer"})`) : ""}`);
  } else {
    const w = Math.max(...p.published.map((x) => `${x.protocol} ${x.hostIP}:${x.hostPort} → ${x.target}`.length), 0);
    p.published.forEach((x, i) =>
      lines.push(`${pad(i ? "" : "ports")}${`${x.protocol} ${x.hostIP}:${x.hostPort} → ${x.target}`.padEnd(w)}  ${x.owner}`),
    );
    if (!p.published.length) lines.push(`${pad("ports")}none`);
    if (p.detail) lines.push(`${pad("")}${s.yellow(`publisher: ${p.detail}`)}`);
  }
  for (const u of p.unpublished)
    lines.push(`${pad("")}${s.yellow(`not published: ${u.protocol}/${u.hostPort} for ${u.owner}: ${u.reason}`)}`);
  if (p.publisher?.enabled) {
    lines.push(`${pad("client IP")}${clientAddressWords(p.publisher.keepsSourceIP)}`);
  }
  return lines;
}

export function renderStatus(st: NodeStatus, home: string, s: Style): string[] {
  const t = (p: string) => (p.startsWith(home + "/") ? "~" + p.slice(home.length) : p);
  const k8s = st.versions.components.kubernetes ?? "?";
  const lines = [
    `${st.healthy ? s.green("●") : st.stopped ? "○" : s.red("●")} node ${s.bold(st.node)} is ${st.healthy ? s.green("healthy") : st.stopped ? s.bold("stopped") : s.red("not healthy")} (mode ${st.mode}, Kubernetes ${k8s}, ${st.runtime.name} ${st.runtime.version})`,
  ];
  if (st.stopped) {
    for (const p of st.problems) lines.push(`  ${s.yellow("!")} ${p}`);
    lines.push(`  ${"versions".padEnd(11)} set ${st.versions.set ?? "none"}`, `  ${"fix".padEnd(11)} rootless-k8s start`);
    return lines;
  }
  for (const p of st.problems) lines.push(`  ${s.red("!")} ${p}`);
  const row = (label: string, value: string) => lines.push(`  ${label.padEnd(11)} ${value}`);
  row("API server", `${st.api.url || "?"}  ${st.api.ready ? s.green(st.api.detail) : s.red(st.api.detail)}`);
  if (st.nodeView) {
    const n = st.nodeView;
    const ready = n.conditions.find((c) => c.type === "Ready");
    row(
      "node",
      `${n.ready ? s.green("Ready") : s.red("NotReady")}${ready?.reason ? ` (${ready.reason})` : ""}, kubelet ${n.kubeletVersion ?? "?"}`,
    );
    const other = n.conditions.filter((c) => c.type !== "Ready").map((c) => `${c.type}=${c.status}`);
    // The pressure conditions mean something only while the eviction manager observes the node.
    const blind = st.eviction?.observing === false;
    if (other.length) row("conditions", blind ? s.yellow(`${other.join(", ")} (unknown: nothing is observed)`) : other.join(", "));
    if (st.eviction)
      row(
        "eviction",
        st.eviction.observing === true
          ? `observing: ${st.eviction.detail}`
          : st.eviction.observing === false
            ? s.yellow(`not observing: ${st.eviction.detail}`)
            : s.yellow(`not read (${st.eviction.detail})`),
      );
    row(
      "labels",
      Object.entries(n.labels)
        .filter(([k]) => k.startsWith("rootless-k8s.io/"))
        .map(([k, v]) => `${k}=${v}`)
        .join(", ") || "none of ours",
    );
    row("taints", n.taints.map((x) => `${x.key}${x.value ? `=${x.value}` : ""}:${x.effect}`).join(", ") || "none");
  }
  for (const a of st.addons) row(`add-on ${a.id}`, a.ready ? s.green(`ready, ${a.detail}`) : s.yellow(`not ready, ${a.detail}`));
  row("runtime", st.runtime.cri.answering ? `answers CRI: ${st.runtime.cri.version}` : `not answering (${st.runtime.cri.detail ?? "?"})`);
  lines.push(...portsLines(st.publishing, st.ports, s));
  if (st.nodePorts) lines.push(`${pad("node ports")}${st.nodePorts} (Services' NodePorts)`);
  if (st.limits) lines.push(`${pad("limits")}${limitWords(st.limits)}`);
  if (st.overlay) {
    const o = st.overlay;
    if (!o.peers.length)
      row("overlay", `VTEP ${o.vtep ?? "none yet"}; no other node${o.waiting.length ? ` (waiting: ${o.waiting.join("; ")})` : ""}`);
    o.peers.forEach((p, i) =>
      row(
        i ? "" : "overlay",
        `${p.node} ${p.podCidr} at ${p.publicIP}: ${p.reachable ? s.green("answers") : s.red(`does not answer (${p.error})`)}`,
      ),
    );
  }
  // The issue's words: "network policy: not enforced (reason)", never silent.
  lines.push(
    `  ${st.networkPolicy.enforced ? `network policy: enforced (${st.networkPolicy.detail})` : s.yellow(`network policy: not enforced (${st.networkPolicy.detail})`)}`,
  );
  row("versions", `set ${st.versions.set ?? "none"}${st.versions.previous ? ` (previous: ${st.versions.previous})` : ""}`);
  row(
    "",
    Object.entries(st.versions.components)
      .map(([k, v]) => `${k} ${v}`)
      .join(", "),
  );
  lines.push("  units");
  const w = Math.max(...st.units.map((u) => u.unit.length));
  for (const u of st.units) {
    const state = `${u.activeState} (${u.subState})`;
    const waits = waitsForNodes(u, st.waitingForNodes);
    lines.push(
      `    ${u.unit.padEnd(w)}  ${u.activeState === "active" ? s.green(state) : waits ? s.dim(`${state}: starts ${WHEN_ADMITTED}`) : s.red(state)}${u.mainPid ? `  pid ${u.mainPid}` : ""}${u.nRestarts ? `  ${u.nRestarts} restarts` : ""}`,
    );
  }
  if (st.supervisor === "up") {
    const pid = st.units.find((u) => u.unit.endsWith(".target"))?.mainPid;
    row("runs under", `rootless-k8s up${pid ? ` (pid ${pid})` : ": not running"}; not started at boot`);
  }
  row("logs", `rootless-k8s logs [COMPONENT]  (${st.logs.to === "file" ? `files in ${t(st.logs.where)}` : "journalctl --user"})`);
  return lines;
}

/** "threads 1698 of 96367 (ulimit -u); keys 4 of 200 (kernel.keys.maxkeys)": what the node's user holds of its per-user limits. */
export function limitWords(l: UserLimitFacts): string {
  const parts: string[] = [];
  if (l.threads !== null) parts.push(`threads ${l.threads} of ${l.nproc ?? "?"} (ulimit -u)`);
  if (l.keys) parts.push(`keys ${l.keys.used} of ${l.keys.max} (kernel.keys.maxkeys)`);
  return parts.join("; ") || "unknown";
}
