// The apply engine (applyPlan) end to end on real files in a temporary home: a fake user manager
// that records what it is told (and, when the node is started, brings up a loopback HTTPS "API
// server" serving the certificate the write step just rendered), the real readiness wait through
// the rendered admin kubeconfig (mutual TLS), and the real receipt.
import {
  promises as fsp,
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import * as https from "node:https";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { applyPlan } from "../../../cli/apply/apply-plan";
import { sha256 } from "../../../cli/apply/files";
import { readReceipt, type Receipt } from "../../../cli/apply/receipt";
import type { SystemdUser, UnitState } from "../../../cli/clients/systemd";
import type { Context } from "../../../cli/context";
import { buildPlan } from "../../../cli/plan/index";
import { withNodeRange } from "../../../cli/plan/network";
import { layout } from "../../../cli/render/layout";
import { admitsNodesFile } from "../../../cli/plan/on-demand";
import type { Plan, PlanOptions } from "../../../cli/plan/plan";
import { createProgress } from "../../../cli/ui/progress";
import { makeStyle, type Output } from "../../../cli/ui/output";
import { freePort } from "../../helpers/net";
import { tempDir } from "../../helpers/temp";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

function capture(): Output & { lines: string[] } {
  const lines: string[] = [];
  const style = makeStyle(false);
  return {
    style,
    errStyle: style,
    interactive: false,
    ci: true,
    lines,
    out: (l = "") => void lines.push(l),
    err: (l = "") => void lines.push(l),
  };
}

/** A user manager that records its calls; starting the target starts the loopback API server. */
class FakeManager implements SystemdUser {
  calls: string[] = [];
  active = new Set<string>();
  server: https.Server | null = null;
  requests: string[] = [];
  /** The range the controller-manager gives the node (spec.podCIDR). */
  podCidr = NODE_RANGE;
  constructor(
    private plan: Plan,
    private readyz = 200,
    /** How long the Node reports Ready=False after the API server comes up. */
    public notReadyMs = 0,
  ) {}
  async run(): Promise<never> {
    throw new Error("not used by applyPlan");
  }
  async ensureReachable() {
    this.calls.push("ensure-reachable");
  }
  async daemonReload() {
    this.calls.push("daemon-reload");
  }
  async enable(units: string[]) {
    this.calls.push(`enable ${units.join(" ")}`);
  }
  async disable(units: string[]) {
    this.calls.push(`disable ${units.join(" ")}`);
  }
  async start(units: string[]) {
    this.calls.push(`start ${units.join(" ")}`);
    // As systemd's ConditionPathExists= does: the on-demand units are skipped until the node admits others.
    const admits = existsSync(admitsNodesFile(this.plan.paths));
    for (const u of [...units, ...Object.values(this.plan.units)])
      if (u && (admits || !this.plan.onDemand?.units.includes(u))) this.active.add(u);
    await this.listen();
  }
  async restart(units: string[]) {
    this.calls.push(`restart ${units.join(" ")}`);
  }
  async stop(units: string[]) {
    this.calls.push(`stop ${units.join(" ")}`);
  }
  async resetFailed() {}
  async state(unit: string): Promise<UnitState> {
    const on = this.active.has(unit);
    return {
      unit,
      activeState: on ? "active" : "inactive",
      subState: on ? "running" : "dead",
      result: "success",
      loadState: "loaded",
      mainPid: 0,
      nRestarts: 0,
      needDaemonReload: false,
    };
  }
  async unitLogs() {
    return { source: "journal", lines: [] } as never;
  }
  async hasJournal() {
    return true;
  }

  /** The API server as the node would serve it: its rendered certificate, client certificates required. */
  private async listen(): Promise<void> {
    if (this.server) return;
    const pki = this.plan.paths.pkiDir;
    const k8s = this.plan.versions.components.kubernetes;
    const node = {
      metadata: { name: this.plan.node.name, labels: {} as Record<string, string> },
      // The controller-manager's allocation (--allocate-node-cidrs).
      spec: { podCIDR: this.podCidr },
      status: { conditions: [{ type: "Ready", status: "True", lastHeartbeatTime: "" }], nodeInfo: { kubeletVersion: `v${k8s}` } },
    };
    const readyAt = Date.now() + this.notReadyMs;
    this.server = https.createServer(
      {
        cert: readFileSync(join(pki, "apiserver.crt")),
        key: readFileSync(join(pki, "apiserver.key")),
        ca: readFileSync(join(pki, "ca.crt")),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        this.requests.push(`${req.method} ${req.url}`);
        let body = "";
        req.on("data", (c) => (body += c));
        req.on("end", () => {
          if (req.url === "/readyz") return res.writeHead(this.readyz).end(this.readyz === 200 ? "ok" : "etcd failed");
          if (req.url === "/version") return res.writeHead(200).end(JSON.stringify({ gitVersion: `v${k8s}` }));
          node.status.conditions[0]!.status = Date.now() >= readyAt ? "True" : "False";
          // A running kubelet's heartbeat, in whole seconds as it writes it.
          node.status.conditions[0]!.lastHeartbeatTime = new Date().toISOString().replace(/\.\d+Z$/, "Z");
          if (req.method === "PATCH")
            Object.assign(
              node.metadata.labels,
              (JSON.parse(body) as { metadata?: { labels?: Record<string, string> } }).metadata?.labels ?? {},
            );
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(node));
        });
      },
    );
    await new Promise<void>((ok) => this.server!.listen(this.plan.ports.apiServer, "127.0.0.1", ok));
  }
  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    const closed = new Promise((ok) => s.close(ok));
    s.closeAllConnections();
    await closed;
  }
}

const managers: FakeManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m.close();
});

const NODE_RANGE = "10.244.0.0/24";

/**
 * A home, an installed version set, and plans for it. The plans know the node's pod range, as a
 * re-install's do (cli/apply/prepare.ts keeps it): one pass. `fresh`: a first install's plans,
 * whose node has no range yet: two passes.
 */
async function setUp(options: Partial<PlanOptions> = {}, { fresh = false } = {}) {
  const home = tempDir("rk8s-apply-");
  const facts = baseFacts();
  facts.user.home = home;
  facts.user.runtimeDir = { ...facts.user.runtimeDir, path: join(home, "run") };
  const apiPort = await freePort("127.0.0.1");
  const plan = (o: Partial<PlanOptions> = {}) => {
    const p = buildPlan(facts, { apiPort, env: {}, ...options, ...o }, upstreamVersions());
    return fresh ? p : { ...p, cidrs: withNodeRange(p.cidrs, NODE_RANGE) };
  };
  const first = plan();
  // The version set is installed already and intact, so fetch has nothing to download.
  mkdirSync(first.paths.versionBinDir, { recursive: true });
  const bin = join(first.paths.versionBinDir, "kubelet");
  writeFileSync(bin, "#!/bin/sh\n", { mode: 0o755 });
  const set = {
    id: first.versions.id,
    binDir: first.paths.versionBinDir,
    versions: { ...first.versions.components },
    binaries: [{ path: bin, sha256: sha256("#!/bin/sh\n"), mode: 0o755, kind: "binary" as const }],
  };
  const previous = {
    sets: { [set.id]: set },
    files: [],
    createdDirs: [],
    kubeconfigMerge: null,
    state: "uninstalled",
  } as unknown as Receipt;
  return { home, plan, first, previous };
}

/**
 * A manager on which one unit gave up while the API server was still starting, as systemd does
 * with a unit that hit its start limit: it stays failed (start-limit-hit) until reset-failed, and
 * a start after that brings it up.
 */
class GaveUpManager extends FakeManager {
  reset: string[] = [];
  constructor(
    plan: Plan,
    private gaveUp: string,
  ) {
    super(plan, 200, 2500);
  }
  override async resetFailed(units: string[] = []) {
    this.calls.push(`reset-failed ${units.join(" ")}`);
    this.reset.push(...units);
  }
  override async state(unit: string): Promise<UnitState> {
    const s = await super.state(unit);
    const starts = this.calls.filter((c) => c.startsWith("start ")).length;
    if (unit === this.gaveUp && (!this.reset.includes(unit) || starts < 2))
      return { ...s, activeState: "failed", subState: "failed", result: "start-limit-hit", nRestarts: 5 };
    return s;
  }
}

/** A manager on which one unit is "activating (auto-restart)" for `ms` after the start, then active. */
class RestartingManager extends FakeManager {
  activeSeen = false;
  private startedAt = 0;
  constructor(
    plan: Plan,
    private unit: string,
    private ms: number,
  ) {
    super(plan);
  }
  override async start(units: string[]) {
    if (!this.startedAt) this.startedAt = Date.now();
    await super.start(units);
  }
  override async state(unit: string): Promise<UnitState> {
    const s = await super.state(unit);
    if (unit !== this.unit || !this.startedAt) return s;
    if (Date.now() - this.startedAt < this.ms) return { ...s, activeState: "activating", subState: "auto-restart", nRestarts: 1 };
    this.activeSeen = true;
    return s;
  }
}

async function apply(
  plan: Plan,
  previous: Receipt | null,
  opts: { readyz?: number; merge?: boolean; timeoutMs?: number; systemd?: FakeManager } = {},
) {
  const out = capture();
  const systemd = opts.systemd ?? new FakeManager(plan, opts.readyz);
  managers.push(systemd);
  const ctx: Context = { out, env: {}, cwd: "/", stdinIsTTY: false, signal: new AbortController().signal };
  const run = applyPlan(ctx, {
    plan,
    previous,
    components: null,
    progress: await createProgress(out),
    merge: opts.merge ?? false,
    timeoutMs: opts.timeoutMs ?? 20_000,
    source: {},
    systemd,
  });
  return { run, systemd, out };
}

/**
 * A node installed once: its receipt, the units its run left active, and its manager closed (the next
 * run's manager serves the port).
 */
async function installedOnce() {
  const s = await setUp();
  const one = await apply(s.first, s.previous);
  await one.run;
  await one.systemd.close();
  return { ...s, active: one.systemd.active, installed: (await readReceipt(s.first.paths.receipt))! };
}

/** The installed receipt as a run killed on its way from an older set left it: that set current and listed. */
function namingOlderSet(installed: Receipt, id: string, over: Partial<Receipt> = {}): Receipt {
  const older = { ...installed.sets[installed.current!]!, id };
  return { ...installed, current: id, sets: { ...installed.sets, [id]: older }, ...over };
}

describe("applyPlan", () => {
  it("writes the node, records it in the receipt, starts it and waits for Ready through the rendered kubeconfig", async () => {
    const { first, previous, home } = await setUp();
    const { run, systemd } = await apply(first, previous, { merge: true });
    const r = await run;
    expect(r.written).toBeGreaterThan(20);
    expect(r.unchanged).toBe(false);
    expect(r.restarted).toEqual([]);
    expect(r.ready.node.name).toBe(first.node.name);
    expect(r.mergedContext).toBe("rootless-k8s");
    expect(systemd.calls).toEqual(["ensure-reachable", "daemon-reload", `enable ${first.units.target}`, `start ${first.units.target}`]);
    expect(systemd.requests).toContain("GET /readyz");
    expect(systemd.requests).toContain(`GET /api/v1/nodes/${first.node.name}`);
    expect(systemd.requests).toContain("GET /api/v1/namespaces/default/serviceaccounts/default");
    // the kubelet registers without our labels here: the engine puts them on the Node object
    expect(systemd.requests).toContain(`PATCH /api/v1/nodes/${first.node.name}`);
    const receipt = (await readReceipt(first.paths.receipt))!;
    expect(receipt).toMatchObject({ state: "installed", current: first.versions.id, mode: first.mode.name });
    expect(receipt.files.length).toBe(r.written);
    expect(statSync(join(first.paths.pkiDir, "ca.key")).mode & 0o777).toBe(0o600);
    expect(statSync(first.paths.pkiDir).mode & 0o777).toBe(0o700);
    expect(readFileSync(join(home, ".kube", "config"), "utf8")).toContain("name: rootless-k8s");
  });

  it("makes the folder of the node's sockets 0700, tightening the user's own (issue 34)", async () => {
    const { first, previous } = await setUp();
    mkdirSync(first.paths.runtimeDir, { recursive: true });
    chmodSync(first.paths.runtimeDir, 0o777);
    await (await apply(first, previous)).run;
    expect(statSync(first.paths.runtimeDir).mode & 0o7777).toBe(0o700);
  });

  it("a link in place of the sockets' folder stops it before anything is written or started (issue 34)", async () => {
    const { first, previous, home } = await setUp();
    const elsewhere = join(home, "elsewhere");
    mkdirSync(elsewhere);
    mkdirSync(dirname(first.paths.runtimeDir), { recursive: true, mode: 0o700 });
    symlinkSync(elsewhere, first.paths.runtimeDir);
    const { run, systemd } = await apply(first, previous);
    await expect(run).rejects.toMatchObject({ exitCode: 3, message: expect.stringMatching(/: it is a symbolic link \(to /) });
    expect(systemd.calls).toEqual([]);
    expect(await readReceipt(first.paths.receipt)).toBeNull();
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it("a first node takes the first /24 of the pod network at once: one pass, checked against its spec.podCIDR once Ready (#33)", async () => {
    const { first, previous } = await setUp({}, { fresh: true });
    expect(first.cidrs.node).toBeNull();
    expect(NODE_RANGE).toBe(first.cidrs.pods.replace(/\/\d+$/, "/24"));
    const { run, systemd, out } = await apply(first, previous);
    const r = await run;
    expect(r.plan.cidrs.node).toBe(NODE_RANGE);
    expect(r.plan.cidrs.reasons.at(-1)).toContain(`${NODE_RANGE}, the range the controller-manager gave it`);
    const cni = JSON.parse(readFileSync(layout(r.plan).cniConflist, "utf8")) as { plugins: { ipam?: { ranges: unknown } }[] };
    expect(cni.plugins[0]!.ipam!.ranges).toEqual([[{ subnet: NODE_RANGE }]]);
    expect(systemd.calls).toEqual(["ensure-reachable", "daemon-reload", `enable ${first.units.target}`, `start ${first.units.target}`]);
    expect(out.lines.filter((l) => /intact/.test(l))).toEqual([expect.stringContaining("already installed and intact")]);
    const receipt = (await readReceipt(first.paths.receipt))!;
    expect((receipt.plan as Plan).cidrs.node).toBe(NODE_RANGE);
  });

  it("a first node the controller-manager gives another range takes a second pass: its CNI network for that range, then Ready", async () => {
    const { first, previous } = await setUp({}, { fresh: true });
    const other = first.cidrs.pods.replace(/\.0\.0\/\d+$/, ".7.0/24");
    const systemd = new FakeManager(first);
    systemd.podCidr = other;
    const { run, out } = await apply(first, previous, { systemd });
    const r = await run;
    expect(r.plan.cidrs.node).toBe(other);
    const cni = JSON.parse(readFileSync(layout(r.plan).cniConflist, "utf8")) as { plugins: { ipam?: { ranges: unknown } }[] };
    expect(cni.plugins[0]!.ipam!.ranges).toEqual([[{ subnet: other }]]);
    expect(out.lines.join("\n")).toContain(`the controller-manager gave the node ${other}, not ${NODE_RANGE}`);
    // The set is hashed once: the second pass takes the first's word for it (#33: 2.2 s of a warm install).
    expect(out.lines.filter((l) => /intact/.test(l))).toEqual([
      expect.stringContaining("already installed and intact"),
      expect.stringContaining("checked intact by this run"),
    ]);
    expect(((await readReceipt(first.paths.receipt))!.plan as Plan).cidrs.node).toBe(other);
  });

  it("a single node runs without its on-demand units (overlay, approver): systemd skips them, and install does not wait for them (#33)", async () => {
    const { first, previous } = await setUp();
    expect(first.onDemand?.units).toEqual([first.units.overlay, first.units.csrApprover]);
    const { run, systemd } = await apply(first, previous);
    await run;
    expect(existsSync(admitsNodesFile(first.paths))).toBe(false);
    for (const u of first.onDemand?.units ?? []) expect(systemd.active.has(u), u).toBe(false);
    expect(systemd.active.has(first.units.kubelet)).toBe(true);
    const unit = readFileSync(join(first.paths.unitDir, first.units.overlay as string), "utf8");
    expect(unit).toContain(`ConditionPathExists=${admitsNodesFile(first.paths)}`);
  });

  it("an upgrade of a node whose plan ran the overlay and approver always keeps running them: it is marked as admitting nodes (#33)", async () => {
    const { first, previous } = await setUp();
    const { onDemand: _, ...older } = first;
    const installed = { ...previous, state: "installed", plan: older } as Receipt;
    const { run, systemd } = await apply(first, installed);
    await run;
    expect(statSync(admitsNodesFile(first.paths)).mode & 0o777).toBe(0o600);
    for (const u of first.onDemand?.units ?? []) expect(systemd.active.has(u), u).toBe(true);
  });

  it("a second run of the same plan writes nothing, reloads nothing and restarts nothing", async () => {
    const { first, installed } = await installedOnce();
    const again = await apply(first, installed);
    const r = await again.run;
    expect(r).toMatchObject({ written: 0, restarted: [], unchanged: true });
    expect(again.systemd.calls).toEqual(["ensure-reachable", `enable ${first.units.target}`, `start ${first.units.target}`]);
  });

  it("a changed plan rewrites what differs and restarts only the running units it touches", async () => {
    const { plan, active, installed } = await installedOnce();
    const tainted = plan({ taintNone: true });
    const two = await apply(tainted, installed);
    two.systemd.active = new Set(active); // the node runs
    const r = await two.run;
    expect(r.written).toBeGreaterThan(0);
    expect(r.restarted).toEqual([tainted.units.kubelet]);
    expect(two.systemd.calls).toContain(`restart ${tainted.units.kubelet}`);
  });

  it("a run that died after writing, before its restarts, leaves them owed in the receipt: the re-run makes them (#35)", async () => {
    const { first, plan, active, installed } = await installedOnce();
    const tainted = plan({ taintNone: true });
    // The kubelet's config is written, then the run dies before it asks for any restart.
    const dying = new FakeManager(tainted);
    dying.active = new Set(active);
    dying.resetFailed = async () => {
      throw new Error("killed");
    };
    await expect((await apply(tainted, installed, { systemd: dying })).run).rejects.toThrow("killed");
    expect(dying.calls.filter((c) => c.startsWith("restart"))).toEqual([]);
    expect((await readReceipt(first.paths.receipt))!.restartsOwed).toEqual([tainted.units.kubelet]);
    // The re-run finds every file already written; it still restarts the kubelet, then owes nothing.
    const again = await apply(tainted, await readReceipt(first.paths.receipt));
    again.systemd.active = new Set(active);
    const r = await again.run;
    expect(r.written).toBe(0);
    expect(r.restarted).toEqual([tainted.units.kubelet]);
    // Reloaded first: the dead run may have written unit files that no manager read.
    expect(again.systemd.calls.indexOf("daemon-reload")).toBeGreaterThanOrEqual(0);
    expect(again.systemd.calls.indexOf("daemon-reload")).toBeLessThan(again.systemd.calls.indexOf(`restart ${tainted.units.kubelet}`));
    expect((await readReceipt(first.paths.receipt))!.restartsOwed).toBeUndefined();
  });

  it("a run killed after it switched the link, before the receipt named the new set current: the re-run records it, the old one previous (#35)", async () => {
    const { first, active, installed } = await installedOnce();
    // What the killed run left: the link already on the new set, the receipt still on the old one.
    const killed = namingOlderSet(installed, "1.35.9-older", { state: "installing", previous: null });
    const again = await apply(first, killed);
    again.systemd.active = new Set(active);
    await again.run;
    expect(await readReceipt(first.paths.receipt)).toMatchObject({
      state: "installed",
      current: first.versions.id,
      previous: "1.35.9-older",
    });
  });

  it("a run that moves to another set keeps the plan it moves off, for a rollback a resumed upgrade may need (#35)", async () => {
    const { first, active, installed } = await installedOnce();
    const olderPlan = { ...first, versions: { ...first.versions, id: "1.35.9-older" } };
    const again = await apply(first, namingOlderSet(installed, "1.35.9-older", { plan: olderPlan }));
    again.systemd.active = new Set(active);
    await again.run;
    const after = (await readReceipt(first.paths.receipt))!;
    expect((after.previousPlan as Plan).versions.id).toBe("1.35.9-older");
    expect((after.plan as Plan).versions.id).toBe(first.versions.id);
  });

  it("a component that gave up before the API server answered is reset and started again, and the node still comes up", async () => {
    const { first, previous } = await setUp();
    const cm = first.units.controllerManager;
    const systemd = new GaveUpManager(first, cm);
    const { run } = await apply(first, previous, { systemd });
    const r = await run;
    expect(r.ready.node.name).toBe(first.node.name);
    // the first reset-failed clears every unit before the start; the second follows the API server's answer
    const resets = systemd.calls.filter((c) => c.startsWith("reset-failed "));
    expect(resets).toHaveLength(2);
    const resetCall = resets[1]!;
    expect(resetCall.split(" ")).toContain(cm);
    // the API server's own chain is not reset: it was never given up on
    expect(resetCall.split(" ")).not.toContain(first.units.apiServer);
    expect(systemd.calls.filter((c) => c === `start ${first.units.target}`)).toHaveLength(2);
  });

  it("install ends only when every unit runs: a component still restarting after Ready is waited for, and named if it never runs", async () => {
    const { first, previous } = await setUp();
    const cm = first.units.controllerManager;
    const restarting = new RestartingManager(first, cm, 1500);
    const ok = await apply(first, previous, { systemd: restarting });
    await ok.run;
    expect(restarting.activeSeen).toBe(true); // applyPlan returned only after the unit was active

    const stuck = await setUp();
    const never = new RestartingManager(stuck.first, stuck.first.units.controllerManager, 60_000);
    const { run } = await apply(stuck.first, stuck.previous, { systemd: never, timeoutMs: 2500 });
    await expect(run).rejects.toThrow(
      /the node is Ready, but rootless-k8s-kube-controller-manager\.service \(activating, auto-restart\) did not become active/,
    );
  });

  it("a version set whose receipt records no valid sha256 is not taken as intact, not even for a missing binary (issue 34)", async () => {
    for (const recorded of [null, "", "0".repeat(63)]) {
      const { first, previous } = await setUp();
      const set = previous.sets[first.versions.id]!;
      (set.binaries[0] as { sha256: unknown }).sha256 = recorded;
      await fsp.rm(set.binaries[0]!.path); // hashFile gives null for it: must not equal a null sha256
      const { run, systemd } = await apply(first, previous);
      await expect(run, `sha256 ${JSON.stringify(recorded)}`).rejects.toThrow(
        `step "fetch" failed: the binaries of version set ${first.versions.id} are missing or damaged`,
      );
      expect(systemd.calls).toEqual(["ensure-reachable"]);
    }
  });

  it("a node that never gets ready fails the step, and the receipt says which step failed", async () => {
    const { first, previous } = await setUp();
    const { run } = await apply(first, previous, { readyz: 500, timeoutMs: 1500 });
    await expect(run).rejects.toThrow(
      /^step "ready" failed: the API server did not answer \/readyz within 2 s \(last: HTTP 500 etcd failed\)/,
    );
    expect(await readReceipt(first.paths.receipt)).toMatchObject({ state: "failed", failedStep: "ready" });
  });
});
