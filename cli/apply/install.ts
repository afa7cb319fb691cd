// `rootless-k8s install`, the real run (the dry run is in cli/commands/install.ts; both share the
// read-only front half, cli/apply/prepare.ts): doctor →
// questions → plan → confirm → fetch → write → daemon-reload → enable/start → readiness. Every
// change is recorded in the receipt before it is made, so a failure or Ctrl-C at any step leaves a
// node that a re-run completes, and uninstall can always clean up. Re-running with the same plan
// writes nothing and restarts nothing; a changed plan rewrites and restarts only what changed.
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { ExitCode, InterruptedError, UserError, fileSystemError, messageOf, refuseRoot } from "../errors";
import type { Facts } from "../host/facts";
import type { Plan, PlanOptions } from "../plan/plan";
import { describePlan } from "../plan/describe";
import { adminKubeconfig } from "../render/kubeconfig";
import { folders, generatePki, mergeKubeconfig, readPki, renderNode, type Pki, type RenderedFile } from "../render/index";
import { acquireInstallLock } from "../fetch/index";
import type { Context } from "../context";
import { createProgress, type Progress } from "../ui/progress";
import { createPrompter, type Prompter } from "../ui/prompt";
import { ensureDir, hashFile, switchSymlink, writeFileAtomic } from "./files";
import { allUnits, restartsFor, rootsOf, sharedParents, startOrder, unitsWithNewBinaries } from "./node";
import { apiClient, readKubeconfig, waitForReady, type ReadyResult } from "./readiness";
import { mergeFiles, writeReceipt, type Receipt, type ReceiptSet } from "./receipt";
import { fetchSet, type ComponentSource, type Components } from "./components";
import { reconcileNode } from "./node-object";
import { prepareNode, refuseOnBlocking, type PrepareRequest } from "./prepare";
import { diffFiles, removeStale, toReceiptFile, writeFiles } from "./sync";
import { systemdUser, type SystemdUser } from "./systemd";
import { describeUnitFailure, unitProbe } from "./watch";
import { VERSION } from "../version";

/** The real install's request: the front half's, and the answers the flags give in advance. */
export interface InstallRequest extends PrepareRequest {
  yes: boolean;
  timeoutSeconds: number;
  /** true/false from the flags; undefined: ask (or the default when not interactive). */
  mergeKubeconfig: boolean | undefined;
}

export async function installNode(ctx: Context, o: InstallRequest): Promise<number> {
  refuseRoot("install");
  const out = ctx.out;
  const progress = await createProgress(out);
  const prompter = createPrompter({ out, yes: o.yes, stdinIsTTY: ctx.stdinIsTTY, signal: ctx.signal });

  // 1. doctor (a failing check stops here, before any question), 2. questions, 3. the plan.
  out.err(`${out.errStyle.cyan("==>")} Checking this host`);
  const prepared = await prepareNode(o, {
    async beforePlan(facts, diagnosis, blocking, previous) {
      reportVerdict(ctx, diagnosis);
      refuseOnBlocking(out, blocking, "install");
      return askOptions(prompter, facts, o.plan, previous);
    },
  });
  const { plan, facts, components, receipt: previous } = prepared;
  const merge = await askMerge(prompter, o.mergeKubeconfig, plan);
  await showPlan(ctx, plan, previous);
  if (!(await prompter.confirm("Install this node?", { default: true, unattended: true }))) {
    out.err("Nothing was changed.");
    return ExitCode.Ok;
  }

  const lock = await acquireInstallLock({ env: ctx.env, purpose: "rootless-k8s install" });
  try {
    const result = await applyPlan(ctx, { plan, previous, components, progress, merge, timeoutMs: o.timeoutSeconds * 1000, source: o.source });
    printSummary(ctx, plan, facts, result);
    return ExitCode.Ok;
  } finally {
    await lock.release();
  }
}

function reportVerdict(ctx: Context, d: { mode: string; reasons: string[]; givesUp: string[] }): void {
  const s = ctx.out.errStyle;
  ctx.out.err(`${s.bold("mode")} ${d.mode}: ${d.reasons.join("; ")}`);
  if (d.givesUp.length) {
    ctx.out.err("  this node gives up:");
    for (const g of d.givesUp) ctx.out.err(`   - ${g}`);
  }
}

/** The questions that cannot be inferred; each answer also has a flag, and unattended runs never ask. */
async function askOptions(p: Prompter, facts: Facts, chosen: PlanOptions, previous: Plan | null): Promise<PlanOptions> {
  const options: PlanOptions = { ...chosen };
  const docker = facts.runtimes.docker;
  if (!options.runtime && docker?.serverReachable && docker.rootless) {
    options.runtime = await p.select<"containerd" | "docker">(
      "Which container runtime should the node use?",
      [
        { value: "containerd", name: "containerd (installed by rootless-k8s, in the node's own namespace)" },
        { value: "docker", name: `your rootless Docker ${docker.serverVersion ?? ""} (through cri-dockerd)`.replace("  ", " ") },
      ],
      { default: "containerd", unattended: "containerd" },
    );
  }
  const ours = new Set(previous?.network.published.map((x) => x.hostPort) ?? []);
  const taken = new Set(facts.network.listeningTcpPorts.filter((x) => !ours.has(x)));
  const wanted = options.apiPort ?? previous?.ports.apiServer ?? 6443;
  if (options.apiPort === undefined && taken.has(wanted)) {
    let free = wanted + 1;
    while (taken.has(free)) free++;
    const answer = await p.input(`Port ${wanted} is in use on this host. Which port should the API server be published on?`, {
      default: String(free),
      unattended: String(free),
      validate: (v) => (/^\d+$/.test(v) && Number(v) > 0 && Number(v) < 65536 ? (taken.has(Number(v)) ? `port ${v} is in use too` : true) : "a port number, 1-65535"),
    });
    options.apiPort = Number(answer);
  } else if (options.apiPort === undefined && previous) options.apiPort = previous.ports.apiServer;
  return options;
}

async function askMerge(p: Prompter, flag: boolean | undefined, plan: Plan): Promise<boolean> {
  if (flag !== undefined) return flag;
  return p.confirm(`Add a "rootless-k8s" context to ${plan.paths.userKubeconfig} (nothing of yours is replaced)?`, { default: true, unattended: false });
}

async function showPlan(ctx: Context, plan: Plan, previous: Receipt | null): Promise<void> {
  ctx.out.err(ctx.out.errStyle.bold(`Node plan for ${plan.user.name}`));
  for (const line of describePlan(plan, ctx.out.errStyle)) ctx.out.err(line);
  if (previous && previous.state !== "uninstalled") ctx.out.err("A node is installed already: only what differs is rewritten, and only what it touches restarts.");
}

export interface ApplyInput {
  plan: Plan;
  previous: Receipt | null;
  /** Where a version set that is not installed yet comes from (a rollback needs none). */
  components: Components | null;
  progress: Progress;
  merge: boolean;
  timeoutMs: number;
  source: ComponentSource;
}

export interface ApplyResult {
  ready: ReadyResult;
  written: number;
  restarted: string[];
  /** Nothing was written and nothing restarted. */
  unchanged: boolean;
  mergedContext: string | null;
}

/** fetch → write → daemon-reload → enable/start → ready, recording each change in the receipt first. */
export async function applyPlan(ctx: Context, input: ApplyInput): Promise<ApplyResult> {
  const { plan, previous, progress } = input;
  const signal = ctx.signal;
  const systemd = systemdUser({ env: ctx.env, logDir: plan.logging.to === "file" ? plan.paths.logDir : undefined });
  let receipt: Receipt = previous && previous.state !== "uninstalled" ? previous : freshReceipt(plan, previous);
  const record = async (r: Receipt) => {
    receipt = r;
    await writeReceipt(plan.paths.receipt, r);
  };
  const fail = async (e: unknown): Promise<never> => {
    const step = progress.current ?? "install";
    await writeReceipt(plan.paths.receipt, { ...receipt, state: "failed", failedStep: step }).catch(() => {});
    if (e instanceof InterruptedError || signal.aborted) {
      throw new InterruptedError(`interrupted during step "${step}"; re-run \`rootless-k8s install\` to finish (or \`rootless-k8s uninstall\`)`);
    }
    const user = e instanceof UserError ? e : fileSystemError(e);
    if (user) throw new UserError(`step "${step}" failed: ${user.message}`, { exitCode: user.exitCode, fix: user.fix, cause: e });
    throw e;
  };

  // The set the node runs now (before this install), to restart only units whose binary changes.
  const previousSet = receipt.current ? (receipt.sets[receipt.current] ?? null) : null;
  try {
    await systemd.ensureReachable();

    // fetch: a version set already installed intact is not fetched again.
    const set = await progress.step("fetch", `Fetching Kubernetes ${plan.versions.components.kubernetes} and its components`, async (h) => {
      const have = receipt.sets[plan.versions.id];
      if (have && (await setIntact(have))) {
        h.update("already installed and intact");
        return { set: have, changed: false };
      }
      if (!input.components) throw new UserError(`the binaries of version set ${plan.versions.id} are missing or damaged`, { fix: "re-run `rootless-k8s install` with the manifest of that set (--manifest FILE)" });
      const installed = await fetchSet(ctx, plan, input.components, input.source, h);
      return { set: installed, changed: true };
    });
    if (set.changed) await record({ ...receipt, sets: { ...receipt.sets, [set.set.id]: set.set }, state: "installing" });

    // write: PKI reused where it still fits, every file compared with the disk.
    const written = await progress.step("write", "Writing units, configuration and certificates", async (h) => {
      const { files, pki } = await renderFiles(plan);
      const changes = await diffFiles(files, receipt);
      const linkChanged = (await fsp.readlink(plan.paths.currentLink).catch(() => null)) !== plan.versions.id;
      const unchanged = changes.write.length === 0 && changes.stale.length === 0 && !linkChanged && !set.changed;
      if (unchanged) {
        h.update(`all ${files.length} files are up to date`);
        return { changes, linkChanged, files, pki, unchanged };
      }
      // Record what is about to be written (old and new paths), then write.
      await record({
        ...receipt,
        state: "installing",
        plan,
        mode: plan.mode.name,
        runtime: plan.runtime.name,
        files: mergeFiles(receipt.files, files.map(toReceiptFile)),
        roots: rootsOf(plan),
      });
      // Folders get the modes the render layer names (secrets 0700); the data folders, which no file names, too.
      const dirs = folders(plan);
      const modes = new Map(dirs.map((f) => [f.path, f.mode]));
      const created = await writeFiles(changes.write, (dir) => modes.get(dir) ?? 0o755, signal);
      for (const f of dirs) await ensureDir(f.path, f.mode);
      await removeStale(changes.stale);
      if (linkChanged) await switchSymlink(plan.paths.currentLink, plan.versions.id);
      await record({
        ...receipt,
        files: files.map(toReceiptFile).sort((a, b) => a.path.localeCompare(b.path)),
        current: plan.versions.id,
        previous: linkChanged && receipt.current && receipt.current !== plan.versions.id ? receipt.current : receipt.previous,
        createdDirs: [...new Set([...receipt.createdDirs, ...created.filter((d) => sharedParents(plan).some((s) => d === s || s.startsWith(d + "/")))])],
      });
      h.update(`${changes.write.length} written, ${changes.unchanged.length} unchanged${changes.stale.length ? `, ${changes.stale.length} removed` : ""}`);
      return { changes, linkChanged, files, pki, unchanged };
    });

    const mergedContext = input.merge ? await mergeAdminContext(plan, written.pki, receipt, record) : null;

    // start: daemon-reload only when a unit file changed; restart only what a change touches.
    const restarted = await progress.step("start", "Starting the node (systemctl --user)", async (h) => {
      const unitFilesChanged = written.changes.write.some((f) => f.kind === "unit") || written.changes.stale.some((f) => f.kind === "unit");
      if (unitFilesChanged) await systemd.daemonReload();
      for (const f of written.changes.stale.filter((x) => x.kind === "unit" && x.unit)) await systemd.stop([f.unit as string]);
      await systemd.enable([plan.units.target]);
      const states = await Promise.all(startOrder(plan).map((u) => systemd.state(u)));
      const running = new Set(states.filter((s) => s.activeState === "active" || s.activeState === "activating").map((s) => s.unit));
      const before = receipt.current ? previousSet : null;
      const newBinaries = written.linkChanged || set.changed ? unitsWithNewBinaries(plan, before?.binaries ?? null, set.set.binaries, set.set.binDir, before?.binDir ?? null) : new Set<string>();
      const restart = restartsFor(plan, written.changes.write, newBinaries).filter((u) => running.has(u));
      await systemd.resetFailed(allUnits(plan));
      if (restart.length) await systemd.restart(restart);
      await systemd.start([plan.units.target]);
      h.update(restart.length ? `restarted ${restart.join(", ")}` : running.size === startOrder(plan).length ? "already running" : "started");
      return restart;
    });

    const ready = await progress.step("ready", `Waiting for the node to be Ready (up to ${Math.round(input.timeoutMs / 1000)} s)`, async (h) => {
      const client = apiClient(await readKubeconfig(plan.paths.adminKubeconfig));
      const r = await waitForReady({
        client,
        nodeName: plan.node.name,
        timeoutMs: input.timeoutMs,
        signal,
        probe: unitProbe(systemd, startOrder(plan)),
        expectVersion: plan.versions.components.kubernetes,
        onPhase: (phase) => h.update(phase === "api" ? "API server /readyz" : `node ${plan.node.name} Ready`),
      });
      // The kubelet sets our labels and taints only when it registers: keep the node in line with the plan.
      const changed = await reconcileNode(client, plan, r.node);
      if (changed) h.update(`node ${plan.node.name}: ${changed}`);
      return r;
    });

    if (receipt.state !== "installed" || receipt.tool !== VERSION) await record({ ...receipt, state: "installed", failedStep: undefined, tool: VERSION });
    return { ready, written: written.changes.write.length, restarted, unchanged: written.unchanged && restarted.length === 0, mergedContext };
  } catch (e) {
    if (!(e instanceof InterruptedError) && ["start", "ready"].includes(progress.current ?? "")) await showFailure(ctx, systemd, plan, e);
    return fail(e);
  }
}

/** The failing unit's last lines (journal or log file), and the step's name in the error. */
async function showFailure(ctx: Context, systemd: SystemdUser, plan: Plan, e: unknown): Promise<void> {
  const report = await describeUnitFailure(systemd, startOrder(plan), e);
  for (const l of report) ctx.out.err(l);
}

function freshReceipt(plan: Plan, previous: Receipt | null): Receipt {
  return {
    schemaVersion: 1,
    tool: VERSION,
    state: "installing",
    mode: plan.mode.name,
    runtime: plan.runtime.name,
    target: plan.units.target,
    units: allUnits(plan),
    files: previous?.files ?? [],
    sets: previous?.sets ?? {},
    current: null,
    previous: null,
    currentLink: plan.paths.currentLink,
    roots: rootsOf(plan),
    createdDirs: previous?.createdDirs ?? [],
    kubeconfigMerge: previous?.kubeconfigMerge ?? null,
    plan,
    updatedAt: new Date().toISOString(),
  };
}

async function setIntact(set: ReceiptSet): Promise<boolean> {
  for (const b of set.binaries) if ((await hashFile(b.path)) !== b.sha256) return false;
  return set.binaries.length > 0;
}

/** The node's files, with the PKI they hold (the existing keys and certificates where they still fit). */
async function renderFiles(plan: Plan): Promise<{ files: RenderedFile[]; pki: Pki }> {
  const existing = await readPki(plan, (f) => fsp.readFile(f, "utf8").catch(() => null));
  const pki = await generatePki(plan, { existing });
  return { files: renderNode(plan, pki), pki };
}

async function mergeAdminContext(plan: Plan, pki: Pki, receipt: Receipt, record: (r: Receipt) => Promise<void>): Promise<string | null> {
  const file = plan.paths.userKubeconfig;
  const existing = await fsp.readFile(file, "utf8").catch(() => null);
  let result;
  try {
    result = mergeKubeconfig(existing, adminKubeconfig(plan, pki));
  } catch (e) {
    throw new UserError(`cannot merge into ${file}: ${messageOf(e)}`, { fix: `use the node's own kubeconfig (${plan.paths.adminKubeconfig}), or re-run with --no-merge-kubeconfig` });
  }
  if (result.content !== null) {
    await record({ ...receipt, kubeconfigMerge: { file, ...result.names } });
    const dir = path.dirname(file);
    if (!(await fsp.stat(dir).catch(() => null))) await ensureDir(dir, 0o700);
    await writeFileAtomic(file, result.content, { mode: 0o600 });
  } else if (!receipt.kubeconfigMerge) await record({ ...receipt, kubeconfigMerge: { file, ...result.names } });
  return result.names.context;
}

function printSummary(ctx: Context, plan: Plan, facts: Facts, r: ApplyResult): void {
  const o = ctx.out;
  const s = o.style;
  const k = plan.versions.components.kubernetes;
  const kubectl = path.join(plan.paths.binDir, "kubectl");
  o.out(r.unchanged ? `${s.green("✔")} Node ${plan.node.name} is Ready; nothing changed (mode ${plan.mode.name}, Kubernetes ${k}).` : `${s.green("✔")} Node ${plan.node.name} is Ready (mode ${plan.mode.name}, Kubernetes ${k}).`);
  o.out(`  kubeconfig: ${plan.paths.adminKubeconfig}`);
  o.out(`  try:        ${kubectl} --kubeconfig ${plan.paths.adminKubeconfig} get nodes`);
  if (r.mergedContext) o.out(`              or: kubectl --context ${r.mergedContext} get nodes   (merged into ${plan.paths.userKubeconfig})`);
  o.out(`  logs:       rootless-k8s logs kubelet   (${plan.logging.to === "journal" ? `journalctl --user -u ${plan.units.kubelet}` : `${plan.paths.logDir}/${plan.units.kubelet}.log`})`);
  o.out(`  status:     rootless-k8s status`);
  if (facts.systemd.linger !== true) {
    o.out(`  ${s.yellow("linger is off")}: the node stops when you log out. To keep it running, as root: loginctl enable-linger ${plan.user.name}`);
  }
}
