// The apply engine, shared by install, upgrade and the rollback: fetch → write → daemon-reload →
// enable/start → ready. Every change is recorded in the receipt before it is made, so a failure or
// Ctrl-C at any step leaves a node that a re-run completes, and uninstall can always clean up.
// Re-running with the same plan writes nothing and restarts nothing; a changed plan rewrites and
// restarts only what changed.
import { promises as fsp } from "node:fs";
import { supervisorOf } from "../plan/supervisor";
import { serviceManager } from "../clients/supervisor";
import { selfCommand } from "../self-command";
import { InterruptedError, UserError, fileSystemError } from "../errors";
import type { Plan } from "../plan/plan";
import { folders, generatePki, readPki, renderNode, type Pki, type RenderedFile } from "../render/index";
import type { Context } from "../context";
import type { Progress } from "../ui/progress";
import { ensureDir, hasRecordedContent, switchSymlink } from "./files";
import { allUnits, inStartOrder, restartsFor, rootsOf, sharedParents, startOrder, unitsWithNewBinaries } from "./node";
import { apiClient, readKubeconfig } from "../clients/kubernetes";
import { phaseWords, waitForReady, type ReadyResult } from "../readiness/readiness";
import { mergeFiles, readReceipt, writeReceipt, type Receipt, type ReceiptSet } from "./receipt";
import { fetchSet, type ComponentSource, type Components } from "./components";
import { reconcileNode } from "./node-object";
import { diffFiles, removeStale, toReceiptFile, writeFiles } from "./sync";
import type { SystemdUser } from "../clients/systemd";
import { describeUnitFailure, unitProbe, unitStates, waitForUnitsActive } from "../readiness/watch";
import { VERSION } from "../version";
import { freshReceipt } from "./fresh-receipt";
import { waitForWorkerReady } from "./worker-ready";
import { removeNetworkPolicyRulesOf } from "./network-policy";
import { firstNodeRange, withNodeRange } from "../plan/network";
import { mergeAdminContext } from "./kubeconfig-merge";
import { ensureRuntimeDir } from "./runtime-dir";
import { lostPortError, portsHeldByOthers, type PortClaim } from "./port-claim";
import { markAdmits, unitsToRun } from "./admits-nodes";
import { bootstrapReadiness } from "./bootstrap-marker";

export interface ApplyInput {
  plan: Plan;
  /** The user manager to drive; default: `systemctl --user` (tests give a fake one). */
  systemd?: SystemdUser;
  previous: Receipt | null;
  /** Where a version set that is not installed yet comes from (a rollback needs none). */
  components: Components | null;
  progress: Progress;
  merge: boolean;
  timeoutMs: number;
  source: ComponentSource;
  /** Host ports install holds for the node (port-claim.ts): let go just before the units start, when RootlessKit takes them. */
  claims?: readonly PortClaim[];
  /**
   * "registered" (the first of applyPlan's two passes): wait until the node is registered with its
   * pod range, not until it is Ready (it cannot be: its CNI network needs that range).
   */
  until?: "ready" | "registered";
  /** Ready counts only once the node has its pod range (the first node's range taken ahead, then checked). */
  needsRange?: boolean;
  /** The id of a version set this run has just installed or checked intact (the second pass): not hashed again. */
  verified?: string;
  /** An upgrade's: the set it starts from, recorded until the node is installed (a re-run resumes from it). */
  upgradeFrom?: string;
}

export interface ApplyResult {
  /** The plan the node runs now: the input's, with the node's pod range once it has one. */
  plan: Plan;
  ready: ReadyResult;
  written: number;
  restarted: string[];
  /** Nothing was written and nothing restarted. */
  unchanged: boolean;
  mergedContext: string | null;
  /** The id of the version set this pass installed or found intact. */
  verified?: string;
}

/**
 * fetch → write → daemon-reload → enable/start → ready, recording each change in the receipt first.
 * A first server node takes the range the controller-manager gives the first node (firstNodeRange)
 * and is checked once Ready: one pass (a second one cost 8.9 s of a warm install, waiting for the
 * kubelet's next status after the CNI network appeared). Any other node that has no pod range yet
 * (a join; a first node given another range) takes two passes: the first starts it and waits until
 * the node is registered with the range the controller-manager gives it; the second writes its CNI
 * network for that range and waits until it is Ready. `plan` of the result is the plan the node
 * runs (the input's, with its range).
 */
export async function applyPlan(ctx: Context, given: ApplyInput): Promise<ApplyResult> {
  let input = given;
  if (input.plan.cidrs.node !== null) return applyOnce(ctx, input);
  const expected = input.plan.role === "worker" ? null : firstNodeRange(input.plan.cidrs.pods);
  if (expected) {
    const guess = await applyOnce(ctx, {
      ...input,
      plan: { ...input.plan, cidrs: withNodeRange(input.plan.cidrs, expected) },
      needsRange: true,
    });
    if (guess.ready.node.podCidr === expected) return guess;
    // Another range (a Node kept from before with its own): the CNI network is written for that one.
    const got = guess.ready.node.podCidr;
    ctx.out.err(`the controller-manager gave the node ${got ?? "no range yet"}, not ${expected}: writing its network for that`);
    const plan: Plan = { ...input.plan, cidrs: withNodeRange(input.plan.cidrs, got) };
    const previous = await readReceipt(plan.paths.receipt);
    if (got) return bothPasses(guess, await applyOnce(ctx, { ...input, plan, previous, verified: guess.verified }));
    input = { ...input, previous, verified: guess.verified };
  }
  const first = await applyOnce(ctx, { ...input, until: "registered" });
  const range = first.ready.node.podCidr;
  if (!range) throw new Error("the node registered without a pod range");
  const plan: Plan = { ...input.plan, cidrs: withNodeRange(input.plan.cidrs, range) };
  // The first pass installed or checked this set a moment ago: hashing its binaries again took 2.2 s of a warm install.
  const second = await applyOnce(ctx, { ...input, plan, previous: await readReceipt(plan.paths.receipt), verified: first.verified });
  return bothPasses(first, second);
}

/** The result of two passes: the second's node and plan, what both wrote and restarted. */
function bothPasses(first: ApplyResult, second: ApplyResult): ApplyResult {
  return {
    ...second,
    written: first.written + second.written,
    restarted: [...first.restarted, ...second.restarted],
    unchanged: false,
    mergedContext: first.mergedContext ?? second.mergedContext,
  };
}

async function applyOnce(ctx: Context, input: ApplyInput): Promise<ApplyResult> {
  const { plan, previous, progress } = input;
  const signal = ctx.signal;
  const systemd = input.systemd ?? serviceManager(plan, { env: ctx.env, self: selfCommand() });
  let receipt: Receipt = previous && previous.state !== "uninstalled" ? previous : freshReceipt(plan, previous);
  const record = async (r: Receipt) => {
    receipt = r;
    await writeReceipt(plan.paths.receipt, r);
  };
  const fail = async (e: unknown): Promise<never> => {
    const step = progress.current ?? "install";
    await writeReceipt(plan.paths.receipt, { ...receipt, state: "failed", failedStep: step }).catch(() => {});
    if (e instanceof InterruptedError || signal.aborted) {
      throw new InterruptedError(
        `interrupted during step "${step}"; re-run \`rootless-k8s install\` to finish (or \`rootless-k8s uninstall\`)`,
      );
    }
    const user = e instanceof UserError ? e : fileSystemError(e);
    if (user) throw new UserError(`step "${step}" failed: ${user.message}`, { exitCode: user.exitCode, fix: user.fix, cause: e });
    throw e;
  };

  // The set the node runs now (before this install), to restart only units whose binary changes.
  const previousSet = receipt.current ? (receipt.sets[receipt.current] ?? null) : null;
  // The folder of the node's sockets and pid files: the user's own, 0700, or refused (exit 3) before anything else.
  await ensureRuntimeDir(plan.paths.runtimeDir);
  try {
    await systemd.ensureReachable();

    // fetch: a version set already installed intact is not fetched again.
    const set = await progress.step("fetch", `Fetching Kubernetes ${plan.versions.components.kubernetes} and its components`, async (h) => {
      const have = receipt.sets[plan.versions.id];
      if (have && input.verified === have.id) {
        h.update("installed and checked intact by this run");
        return { set: have, changed: false };
      }
      if (have && (await setIntact(have))) {
        h.update("already installed and intact");
        return { set: have, changed: false };
      }
      if (!input.components)
        throw new UserError(`the binaries of version set ${plan.versions.id} are missing or damaged`, {
          fix: "re-run `rootless-k8s install` with the manifest of that set (--manifest FILE)",
        });
      const installed = await fetchSet(ctx, plan, input.components, input.source, h);
      return { set: installed, changed: true };
    });
    if (set.changed) await record({ ...receipt, sets: { ...receipt.sets, [set.set.id]: set.set }, state: "installing" });

    // write: PKI reused where it still fits, every file compared with the disk.
    const written = await progress.step("write", "Writing units, configuration and certificates", async (h) => {
      const { files, pki } = await renderFiles(plan);
      const changes = await diffFiles(files, receipt);
      const linkChanged = (await fsp.readlink(plan.paths.currentLink).catch(() => null)) !== plan.versions.id;
      // (A receipt that names another set current, from a run killed after it switched the link, is a change: it is recorded.)
      const unchanged =
        changes.write.length === 0 && changes.stale.length === 0 && !linkChanged && !set.changed && receipt.current === plan.versions.id;
      // The restarts this change needs, with those an earlier run recorded and did not live to make
      // (killed after writing, before restarting): recorded before anything is written, so a re-run,
      // which finds the files and the link already new, still restarts what runs on the old ones.
      const newBinaries =
        linkChanged || set.changed || (receipt.current !== null && receipt.current !== plan.versions.id)
          ? unitsWithNewBinaries(plan, previousSet?.binaries ?? null, set.set.binaries, set.set.binDir, previousSet?.binDir ?? null)
          : new Set<string>();
      const owed = inStartOrder(plan, [...(receipt.restartsOwed ?? []), ...restartsFor(plan, changes.write, newBinaries)]);
      if (unchanged) {
        h.update(`all ${files.length} files are up to date`);
        return { changes, linkChanged, files, pki, unchanged, owed };
      }
      // Record what is about to be written (old and new paths) and the restarts it owes, then write.
      await record({
        ...receipt,
        state: "installing",
        failedStep: undefined,
        restartsOwed: owed.length ? owed : undefined,
        upgradingFrom: input.upgradeFrom,
        plan,
        // The plan of the set this run moves off: what a rollback needs once this plan is recorded.
        previousPlan: (receipt.plan as Plan | undefined)?.versions?.id === plan.versions.id ? receipt.previousPlan : receipt.plan,
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
      const keptStale = await removeStale(changes.stale);
      if (linkChanged) await switchSymlink(plan.paths.currentLink, plan.versions.id);
      await record({
        ...receipt,
        files: files.map(toReceiptFile).sort((a, b) => a.path.localeCompare(b.path)),
        current: plan.versions.id,
        // The set the receipt last named current, when this run moves off it: also when a run killed
        // after switching the link left the receipt naming the old one (the link is new already).
        previous: receipt.current && receipt.current !== plan.versions.id ? receipt.current : receipt.previous,
        createdDirs: [
          ...new Set([...receipt.createdDirs, ...created.filter((d) => sharedParents(plan).some((s) => d === s || s.startsWith(d + "/")))]),
        ],
      });
      h.update(
        `${changes.write.length} written, ${changes.unchanged.length} unchanged${changes.stale.length > keptStale.length ? `, ${changes.stale.length - keptStale.length} removed` : ""}${keptStale.length ? `, kept ${keptStale.map((f) => f.path).join(", ")} (no longer rendered, but not as rootless-k8s wrote it: remove by hand if not needed)` : ""}`,
      );
      return { changes, linkChanged, files, pki, unchanged, owed };
    });

    const mergedContext = input.merge && written.pki ? await mergeAdminContext(plan, written.pki, receipt, record) : null;

    // start: daemon-reload only when a unit file changed; restart only what a change touches.
    let kubeletStartedAt: number | undefined;
    const restarted = await progress.step(
      "start",
      `Starting the node (${supervisorOf(plan) === "up" ? "rootless-k8s up" : "systemctl --user"})`,
      async (h) => {
        const unitFilesChanged =
          written.changes.write.some((f) => f.kind === "unit") || written.changes.stale.some((f) => f.kind === "unit");
        // (Also when restarts are owed: the run that owes them may have written unit files and died before its reload.)
        if (unitFilesChanged || receipt.restartsOwed?.length) await systemd.daemonReload();
        for (const c of input.claims ?? []) await c.release();
        for (const f of written.changes.stale.filter((x) => x.kind === "unit" && x.unit)) await systemd.stop([f.unit as string]);
        // A node whose plan ran the overlay and the approver always keeps running them (they are on demand now).
        const before = previous && previous.state !== "uninstalled" ? (previous.plan as Plan | undefined) : undefined;
        // Enforcement turned off: its rules come out of the namespace with the unit.
        if (before?.networkPolicy?.enforced && !plan.networkPolicy?.enforced) {
          const failed = await removeNetworkPolicyRulesOf(plan, before.networkPolicy.backend ?? "iptables");
          h.update(failed ? `the NetworkPolicy rules stay until the node restarts: ${failed}` : "NetworkPolicy rules removed");
        }
        if (before && !before.onDemand && plan.onDemand?.units.some((u) => Object.values(before.units).includes(u))) await markAdmits(plan);
        await systemd.enable([plan.units.target]);
        const states = await unitStates(systemd, startOrder(plan));
        const running = new Set(states.filter((s) => s.activeState === "active" || s.activeState === "activating").map((s) => s.unit));
        const restart = written.owed.filter((u) => running.has(u));
        // A kubelet that starts now posts a new Ready; until then the API holds the old kubelet's.
        if (restart.includes(plan.units.kubelet) || !running.has(plan.units.kubelet)) kubeletStartedAt = Date.now();
        await systemd.resetFailed(allUnits(plan));
        if (restart.length) await systemd.restart(restart);
        // Asked of the manager, which carries them out even if this run dies now: no longer owed.
        if (receipt.restartsOwed) await record({ ...receipt, restartsOwed: undefined });
        await systemd.start([plan.units.target]);
        h.update(
          restart.length
            ? `restarted ${restart.join(", ")}`
            : (await unitsToRun(plan)).every((u) => running.has(u))
              ? "already running"
              : "started",
        );
        return restart;
      },
    );

    const ready =
      plan.role === "worker"
        ? await progress.step("ready", `Waiting for the node to join (up to ${Math.round(input.timeoutMs / 1000)} s)`, async (h) => {
            // kube-proxy runs with the kubelet's certificate, which TLS bootstrap brings: until then
            // it exits and systemd restarts it, maybe past its start limit. So only the runtime and
            // the kubelet are watched until the node is there; then what gave up starts again.
            const order = await unitsToRun(plan);
            const w = {
              timeoutMs: input.timeoutMs,
              signal,
              probe: unitProbe(
                systemd,
                order.filter((u) => u !== plan.units.kubeProxy),
              ),
              onPhase: (p: string) => h.update(p),
              freshSince: kubeletStartedAt,
            };
            const r = await waitForWorkerReady(plan, w, input.until ?? "ready");
            const gaveUp = (await unitStates(systemd, order)).filter((x) => x.activeState === "failed" || x.activeState === "inactive");
            if (gaveUp.length) {
              await systemd.resetFailed(gaveUp.map((x) => x.unit));
              await systemd.start([plan.units.target]);
            }
            h.update("every unit active");
            await waitForUnitsActive(systemd, order, 60_000, signal);
            return r;
          })
        : await progress.step("ready", `Waiting for the node to be Ready (up to ${Math.round(input.timeoutMs / 1000)} s)`, async (h) => {
            const started = Date.now();
            const client = apiClient(await readKubeconfig(plan.paths.adminKubeconfig));
            // Until the API server answers, the components that talk to it (controller-manager,
            // scheduler, kubelet, kube-proxy) exit and are restarted by systemd: on a slow machine the
            // API server's RBAC bootstrap takes longer than their start-up, and their start limit may be
            // hit. So only the units the API server needs are watched first; once it answers, units
            // that gave up are reset and started again, and every unit is watched.
            const order = await unitsToRun(plan);
            const apiUnits = order.slice(0, order.indexOf(plan.units.apiServer) + 1);
            let probe = unitProbe(systemd, apiUnits);
            let restarted = false;
            const restartGaveUp = async () => {
              restarted = true;
              probe = unitProbe(systemd, order);
              const rest = await unitStates(
                systemd,
                order.filter((u) => !apiUnits.includes(u)),
              );
              const gaveUp = rest.filter((s) => s.activeState === "failed" || s.activeState === "inactive").map((s) => s.unit);
              if (gaveUp.length === 0) return;
              await systemd.resetFailed(gaveUp);
              await systemd.start([plan.units.target]);
            };
            const bootstrap = await bootstrapReadiness(plan);
            const r = await waitForReady({
              client,
              nodeName: plan.node.name,
              readyz: bootstrap.readyz,
              timeoutMs: input.timeoutMs,
              signal,
              probe: () => probe(),
              expectVersion: plan.versions.components.kubernetes,
              freshSince: kubeletStartedAt,
              until: input.until ?? "ready",
              needsRange: input.needsRange,
              onPhase: (phase) => {
                h.update(phaseWords(phase, plan.node.name));
                if (phase === "node") probe = restartGaveUp;
              },
            });
            if (!restarted) await restartGaveUp();
            // A component that exited while the API server bootstrapped may still be restarting: the
            // node is installed only when every unit runs.
            h.update("every unit active");
            await waitForUnitsActive(systemd, order, Math.max(1000, input.timeoutMs - (Date.now() - started)), signal);
            if ((input.until ?? "ready") === "ready") await bootstrap.record();
            // The kubelet sets our labels and taints only when it registers: keep the node in line with the plan.
            const changed = await reconcileNode(client, plan, r.node);
            if (changed) h.update(`node ${plan.node.name}: ${changed}`);
            return r;
          });

    if (receipt.state !== "installed" || receipt.tool !== VERSION)
      await record({ ...receipt, state: "installed", failedStep: undefined, upgradingFrom: undefined, tool: VERSION });
    return {
      plan,
      ready,
      written: written.changes.write.length,
      restarted,
      unchanged: written.unchanged && restarted.length === 0,
      mergedContext,
      verified: set.set.id,
    };
  } catch (e) {
    if (!(e instanceof InterruptedError) && ["start", "ready"].includes(progress.current ?? "")) {
      await showFailure(ctx, systemd, plan, e);
      // A port another user took while the node started: say so, not only "keeps restarting".
      const [lost] = await portsHeldByOthers(plan).catch(() => []);
      if (lost) return fail(lostPortError(plan, lost));
    }
    return fail(e);
  }
}

/** The failing unit's last lines (journal or log file), and the step's name in the error. */
async function showFailure(ctx: Context, systemd: SystemdUser, plan: Plan, e: unknown): Promise<void> {
  const report = await describeUnitFailure(systemd, startOrder(plan), e);
  for (const l of report) ctx.out.err(l);
}

/** Every binary of the set is there with its recorded sha256 (an empty or malformed one never matches). */
async function setIntact(set: ReceiptSet): Promise<boolean> {
  for (const b of set.binaries) if (!(await hasRecordedContent(b.path, b.sha256))) return false;
  return set.binaries.length > 0;
}

/** The node's files, with the PKI they hold (the existing keys and certificates where they still fit). */
async function renderFiles(plan: Plan): Promise<{ files: RenderedFile[]; pki: Pki | null }> {
  // A worker holds no key of the cluster: its kubelet gets its certificates from the control plane.
  if (plan.role === "worker") return { files: renderNode(plan, null), pki: null };
  const existing = await readPki(plan, (f) => fsp.readFile(f, "utf8").catch(() => null));
  const pki = await generatePki(plan, { existing });
  return { files: renderNode(plan, pki), pki };
}
