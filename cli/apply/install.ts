// `rootless-k8s install`, the real run, interactive: doctor (the read-only front half shared with
// the dry run, cli/apply/prepare.ts) → questions → plan → confirm → the apply engine
// (cli/apply/apply-plan.ts: fetch → write → start → ready) → the summary.
import * as path from "node:path";
import { ExitCode, refuseRoot } from "../errors";
import type { Facts } from "../host/facts";
import type { Plan, PlanOptions } from "../plan/plan";
import { describePlan } from "../plan/describe";
import { acquireInstallLock, readBundleIndex } from "../fetch/index";
import type { Context } from "../context";
import { createProgress, type Progress } from "../ui/progress";
import { loadBundleImages } from "./images";
import { createPrompter, type Prompter } from "../ui/prompt";
import type { Receipt } from "./receipt";
import { prepareNode, refuseOnBlocking, type PrepareRequest } from "./prepare";
import { applyPlan, type ApplyResult } from "./apply-plan";
import { addonsStep } from "./addons";

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
    const result = await applyPlan(ctx, {
      plan,
      previous,
      components,
      progress,
      merge,
      timeoutMs: o.timeoutSeconds * 1000,
      source: o.source,
    });
    // The bundle's images first: an add-on's pod then starts from them instead of failing to pull.
    if (o.source.bundle) await loadFromBundle(ctx, plan, o.source.bundle, progress);
    await addonsStep(plan, progress, ctx.signal);
    printSummary(ctx, plan, facts, result);
    return ExitCode.Ok;
  } finally {
    await lock.release();
  }
}

/** The image archives an offline bundle carries (bundle --image), loaded once the node is Ready. */
async function loadFromBundle(ctx: Context, plan: Plan, bundle: string, progress: Progress): Promise<void> {
  const index = await readBundleIndex(bundle, ctx.signal);
  const n = index.images?.length ?? 0;
  if (n === 0) return;
  await progress.step("images", `Loading ${n} image archive${n > 1 ? "s" : ""} from the bundle`, async (h) => {
    const loaded = await loadBundleImages(plan, bundle, {
      env: ctx.env,
      signal: ctx.signal,
      onLoaded: (im) => h.update(im.map((i) => i.name).join(", ")),
    });
    h.update(`loaded ${loaded.map((i) => i.name).join(", ")}`);
  });
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
      validate: (v) =>
        /^\d+$/.test(v) && Number(v) > 0 && Number(v) < 65536
          ? taken.has(Number(v))
            ? `port ${v} is in use too`
            : true
          : "a port number, 1-65535",
    });
    options.apiPort = Number(answer);
  } else if (options.apiPort === undefined && previous) options.apiPort = previous.ports.apiServer;
  return options;
}

async function askMerge(p: Prompter, flag: boolean | undefined, plan: Plan): Promise<boolean> {
  if (flag !== undefined) return flag;
  return p.confirm(`Add a "rootless-k8s" context to ${plan.paths.userKubeconfig} (nothing of yours is replaced)?`, {
    default: true,
    unattended: false,
  });
}

async function showPlan(ctx: Context, plan: Plan, previous: Receipt | null): Promise<void> {
  ctx.out.err(ctx.out.errStyle.bold(`Node plan for ${plan.user.name}`));
  for (const line of describePlan(plan, ctx.out.errStyle)) ctx.out.err(line);
  if (previous && previous.state !== "uninstalled")
    ctx.out.err("A node is installed already: only what differs is rewritten, and only what it touches restarts.");
}

function printSummary(ctx: Context, plan: Plan, facts: Facts, r: ApplyResult): void {
  const o = ctx.out;
  const s = o.style;
  const k = plan.versions.components.kubernetes;
  const kubectl = path.join(plan.paths.binDir, "kubectl");
  o.out(
    r.unchanged
      ? `${s.green("✔")} Node ${plan.node.name} is Ready; nothing changed (mode ${plan.mode.name}, Kubernetes ${k}).`
      : `${s.green("✔")} Node ${plan.node.name} is Ready (mode ${plan.mode.name}, Kubernetes ${k}).`,
  );
  o.out(`  kubeconfig: ${plan.paths.adminKubeconfig}`);
  o.out(`  try:        ${kubectl} --kubeconfig ${plan.paths.adminKubeconfig} get nodes`);
  if (r.mergedContext)
    o.out(`              or: kubectl --context ${r.mergedContext} get nodes   (merged into ${plan.paths.userKubeconfig})`);
  o.out(
    `  logs:       rootless-k8s logs kubelet   (${plan.logging.to === "journal" ? `journalctl --user -u ${plan.units.kubelet}` : `${plan.paths.logDir}/${plan.units.kubelet}.log`})`,
  );
  o.out(`  status:     rootless-k8s status`);
  if (facts.systemd.linger !== true) {
    o.out(
      `  ${s.yellow("linger is off")}: the node stops when you log out. To keep it running, as root: loginctl enable-linger ${plan.user.name}`,
    );
  }
}
