// `rootless-k8s install`, the real run, interactive: doctor (the read-only front half shared with
// the dry run, cli/apply/prepare.ts) → questions → plan → confirm → the apply engine
// (cli/apply/apply-plan.ts: fetch → write → start → ready) → the summary.
import * as path from "node:path";
import { supervisorOf, upPaths } from "../plan/supervisor";
import { UP_GIVES_UP } from "../doctor/up";
import { ExitCode, UserError, refuseRoot } from "../errors";
import { apiPortRequest, choosePort, firstFreePort, holderWords } from "../doctor/port-choice";
import { apiServerAddress } from "../plan/network";
import { claimPort, type PortClaim } from "./port-claim";
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
import { networkPolicyStep } from "./network-policy";

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
  // The API port install chose, held until RootlessKit publishes it (port-claim.ts).
  const claims: PortClaim[] = [];
  try {
    return await installClaimed(ctx, o, claims, progress, prompter);
  } finally {
    for (const c of claims) await c.release();
  }
}

async function installClaimed(
  ctx: Context,
  o: InstallRequest,
  claims: PortClaim[],
  progress: Progress,
  prompter: Prompter,
): Promise<number> {
  const out = ctx.out;
  const prepared = await prepareNode(o, {
    async beforePlan(facts, diagnosis, blocking) {
      reportVerdict(ctx, diagnosis);
      refuseOnBlocking(out, blocking, "install");
      return askOptions(prompter, facts, o.plan, claims);
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
      claims,
    });
    // The bundle's images first: an add-on's pod then starts from them instead of failing to pull.
    if (o.source.bundle) await loadFromBundle(ctx, plan, o.source.bundle, progress);
    await addonsStep(plan, progress, ctx.signal);
    await networkPolicyStep(plan, progress, ctx.signal);
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
async function askOptions(p: Prompter, facts: Facts, chosen: PlanOptions, claims: PortClaim[]): Promise<PlanOptions> {
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
  const { port, claim } = await claimApiPort(p, facts, options);
  options.apiPort = port;
  if (claim) claims.push(claim);
  return options;
}

/**
 * The API port, claimed (port-claim.ts): the rule's choice (doctor/port-choice.ts), asked when the
 * wanted one is taken; then bound until RootlessKit starts. A port some other install took between
 * the reading and the claim is avoided and the question asked again (unattended: the next free one).
 * The node's own port (held by its running RootlessKit) needs no claim.
 */
export async function claimApiPort(p: Prompter, facts: Facts, options: PlanOptions): Promise<{ port: number; claim: PortClaim | null }> {
  const address = apiServerAddress(options).hostIP;
  const n = facts.network;
  const fixed = n.apiPortFixed;
  const avoid: number[] = [];
  for (;;) {
    const c = choosePort(n.listeners, apiPortRequest(n, facts.user.uid), avoid);
    if (c.kind === "ours") return { port: c.port, claim: null };
    if (c.kind === "taken") throw apiPortTaken(c.port, holderWords(c.holders, n.listenerNames), c.free);
    let port = c.port;
    if (c.kind === "moved") {
      const busy = new Set([...n.listeners.map((l) => l.port), ...avoid]);
      const answer = await p.input(
        `Port ${c.from} is taken by ${holderWords(c.holders, n.listenerNames)}. Which port should the API server be published on?`,
        {
          default: String(c.port),
          unattended: String(c.port),
          validate: (v) =>
            /^\d+$/.test(v) && Number(v) > 0 && Number(v) < 65536
              ? busy.has(Number(v))
                ? `port ${v} is in use too`
                : true
              : "a port number, 1-65535",
        },
      );
      port = Number(answer);
    }
    const r = await claimPort(address, port);
    if (r.ok) return { port, claim: r.claim };
    if (fixed) throw apiPortTaken(port, "another program", firstFreePort(n.listeners, port + 1, avoid));
    avoid.push(port);
  }
}

/** --api-port on a port someone holds: exit 3, naming the holder and a free port. */
function apiPortTaken(port: number, holder: string, free: number): UserError {
  return new UserError(`--api-port ${port} is taken by ${holder}`, {
    exitCode: ExitCode.Refused,
    fix: `choose a free port: rootless-k8s install --api-port ${free} (or leave --api-port out: install then picks one)`,
  });
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
  if (supervisorOf(plan) === "up") {
    o.out(`  runs under: rootless-k8s up --detach (${upPaths(plan.paths).log}); \`rootless-k8s stop\` stops it`);
    o.out(`  ${s.yellow("not started at boot")}: ${UP_GIVES_UP}`);
  } else if (facts.systemd.linger !== true) {
    o.out(
      `  ${s.yellow("linger is off")}: the node stops when you log out. To keep it running, as root: loginctl enable-linger ${plan.user.name}`,
    );
  }
}
