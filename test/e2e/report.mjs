// Writes test/e2e/out/report.json from one `make e2e` run: per route its mode, the Node's
// status.nodeInfo as the real API server returned it, each scenario with pass or fail and its
// seconds; and for the run each binary's path, sha256, first `--version` line and source
// (module@version or Debian package), and the component build time.
//
//   node test/e2e/report.mjs --opt /opt/rk8s-e2e --build-cache /var/tmp/rk8s-build --out FILE \
//        [--route host=REPORT.jsonl] [--route vm=REPORT.jsonl] [--prepare-seconds N]
//
// A route's REPORT.jsonl is written by scenarios.sh (one JSON object per line). Prints a summary
// table (Markdown) of what it wrote, and the runtime × network matrix: the cells scenarios.sh
// recorded (route, mode, runtime, network → pass, fail or refused, with the reason).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    opt: { type: "string" },
    "build-cache": { type: "string" },
    out: { type: "string" },
    route: { type: "string", multiple: true },
    "prepare-seconds": { type: "string" },
  },
});
if (!values.opt || !values.out) {
  console.error("usage: report.mjs --opt DIR --out FILE [--build-cache DIR] [--route NAME=FILE.jsonl]...");
  process.exit(2);
}
const readJson = (f, fallback) => (existsSync(f) ? JSON.parse(readFileSync(f, "utf8")) : fallback);
const sources = readJson(join(values.opt, "mirror", "sources.json"), { binaries: {} });
const versions = readJson(join(values.opt, "mirror", "versions.json"), {});
const builds = values["build-cache"] ? readJson(join(values["build-cache"], "builds.json"), null) : null;
const images = readJson(join(values.opt, "images", "images.json"), []);

// First --version line of each binary, from the builder's record (it ran each one).
const versionLine = new Map();
for (const b of builds?.builds ?? []) for (const x of b.binaries) versionLine.set(x.path, x.version);

const binaries = Object.entries(sources.binaries ?? {}).map(([name, b]) => ({
  name,
  path: b.path ?? null,
  sha256: b.sha256,
  version: b.path ? (versionLine.get(b.path) ?? null) : null,
  source: b.source,
}));

const routes = {};
// The runtime × network matrix: one cell per line that scenarios.sh wrote with "cell".
const matrix = [];
for (const spec of values.route ?? []) {
  const [name, file] = spec.split("=");
  const lines = existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => {
          try {
            return JSON.parse(l);
          } catch {
            return { unparsed: l };
          }
        })
    : [];
  for (const l of lines.filter((x) => x.cell)) matrix.push({ route: name, mode: l.mode, ...l.cell, result: l.result, reason: l.reason });
  // Each scenario with every check it made: what was asserted, and its result (scenarios.sh's PASS and FAIL lines).
  const checks = lines.filter((l) => l.check).map((l) => l.check);
  const scenarios = lines
    .filter((l) => l.scenario)
    .map(({ scenario, result, failed, seconds }) => ({
      scenario,
      result,
      failed,
      seconds,
      checks: checks.filter((c) => c.scenario === scenario).map(({ result, text }) => ({ result, text })),
    }));
  const node = lines.find((l) => l.nodeInfo);
  const mode = lines.find((l) => l.mode)?.mode ?? null;
  routes[name] = {
    mode,
    ran: lines.length > 0,
    nodeInfo: node?.nodeInfo ?? null,
    labels: node ? Object.fromEntries(Object.entries(node.labels ?? {}).filter(([k]) => k.startsWith("rootless-k8s.io/"))) : null,
    scenarios,
    // The conformance scenario's counts (its JUnit XML and every failing or skipped test with its
    // reason are in test/e2e/out/conformance-<route>/).
    conformance: lines.find((l) => l.conformance)?.conformance?.line ?? null,
    // The restart scenario's start→Ready and stop times (seconds): each cycle, their median and max.
    lifecycle: lines.find((l) => l.lifecycle)?.lifecycle ?? null,
    // The faults scenario's seconds from each SIGKILL until the node was back by itself.
    faults: lines.find((l) => l.faults)?.faults ?? null,
    // The worker scenario's iperf3 figures: pod to pod across the overlay and on one node (Gbit/s),
    // TCP and UDP, and their ratios, measured in the same run.
    overlay: lines.find((l) => l.overlay)?.overlay ?? null,
    // The publish scenario's count of the addresses pods saw over published ports under load.
    clientAddress: lines.find((l) => l.clientAddress)?.clientAddress ?? null,
    // The footprint scenario's memory per component (PSS, RSS, anonymous and file-backed, MiB) at
    // rest and after a workload came and went; the scale and shared-host scenarios' figures.
    footprint: lines.find((l) => l.footprint)?.footprint ?? null,
    scale: lines.find((l) => l.scale)?.scale ?? null,
    sharedHost: lines.find((l) => l.sharedHost)?.sharedHost ?? null,
    // The up scenario's memory: the supervisor's PSS beside the whole node's it runs (MiB).
    up: lines.find((l) => l.up)?.up ?? null,
    // The netpol scenario's memory: the NetworkPolicy enforcer's PSS beside the node's (MiB).
    networkPolicy: lines.find((l) => l.networkPolicy)?.networkPolicy ?? null,
    passed: scenarios.filter((s) => s.result === "pass").length,
    failed: scenarios.filter((s) => s.result !== "pass").length,
  };
}

const report = {
  generated: new Date().toISOString(),
  versions,
  build: builds
    ? {
        goVersion: builds.goVersion,
        seconds: builds.seconds,
        built: builds.built,
        cached: builds.cached,
        perComponent: Object.fromEntries(builds.builds.map((b) => [b.id, { source: `${b.module}@${b.version}`, seconds: b.seconds }])),
      }
    : null,
  prepareSeconds: values["prepare-seconds"] ? Number(values["prepare-seconds"]) : null,
  binaries,
  images,
  routes,
  matrix,
};
mkdirSync(dirname(values.out), { recursive: true });
writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);

const rows = [];
for (const [name, r] of Object.entries(routes)) {
  const ni = r.nodeInfo ?? {};
  rows.push(
    `| ${name} | ${r.mode ?? "?"} | ${ni.kubeletVersion ?? "-"} | ${ni.containerRuntimeVersion ?? "-"} | ${r.passed}/${r.scenarios.length} | ${
      r.scenarios
        .filter((s) => s.result !== "pass")
        .map((s) => s.scenario)
        .join(", ") || "none"
    } |`,
  );
}
console.log(`report: ${values.out}`);
console.log("| route | mode | kubelet | runtime | scenarios passed | failed |");
console.log("|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
// The node's memory at rest per route (issue 33): the heaviest components and the total.
for (const [name, r] of Object.entries(routes)) {
  const f = r.footprint;
  if (!f) continue;
  console.log(`\nmemory at rest, ${name} route (mode ${r.mode}), ${f.idleSeconds} s after the add-ons were available (MiB):`);
  console.log("| component | PSS | anon | file | RSS | after a workload (PSS) |");
  console.log("|---|---|---|---|---|---|");
  for (const [c, v] of Object.entries(f.idle.components))
    console.log(`| ${c} | ${v.pssMiB} | ${v.anonMiB} | ${v.fileMiB} | ${v.rssMiB} | ${f.afterWorkload.components[c]?.pssMiB ?? "-"} |`);
  console.log(
    `| total | ${f.idle.totalPssMiB} | ${f.idle.anonMiB} | ${f.idle.fileMiB} | ${f.idle.totalRssMiB} | ${f.afterWorkload.totalPssMiB} |`,
  );
}
if (matrix.length) {
  console.log("\n| route | mode | runtime | network | result | reason |");
  console.log("|---|---|---|---|---|---|");
  for (const c of matrix)
    console.log(`| ${c.route} | ${c.mode} | ${c.runtime} | ${c.network} | ${c.result} | ${c.reason.replaceAll("|", "\\|")} |`);
}
