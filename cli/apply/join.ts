// `rootless-k8s join URL --ca-hash H` (token in ROOTLESS_K8S_TOKEN): this host's node joins another
// host's control plane as a worker. The join's preflight first (the same checks as `doctor --join`:
// nothing is written when one fails), then this host's own doctor and plan as for install, shaped
// into the worker's plan (cli/plan/worker.ts), then the apply engine, in two passes: the first
// starts the runtime and the kubelet, whose TLS bootstrap (the token) gets it a certificate and
// whose node gets a pod range from the controller-manager; the second writes the CNI network for
// that range, and the node becomes Ready. The token's kubeconfig is removed then.
import { hostname } from "node:os";
import { ExitCode, UserError, refuseRoot } from "../errors";
import type { Context } from "../context";
import { runChecks } from "../doctor/check";
import { showOutcomes } from "../doctor/present";
import { joinChecks } from "../doctor/checks/join";
import { acquireInstallLock } from "../fetch/index";
import type { BootstrapToken } from "../host/parse/bootstrap-token";
import { joinFacts } from "../host/join-facts";
import { describePlan } from "../plan/describe";
import { nodeNameFrom } from "../plan/node";
import type { Plan, PlanOptions } from "../plan/plan";
import { workerAvoids, workerPlan } from "../plan/worker";
import { bootstrapKubeconfig, renderKubeconfig } from "../render/index";
import { layout } from "../render/layout";
import { pkiPaths } from "../render/pki";
import { createProgress } from "../ui/progress";
import { createPrompter } from "../ui/prompt";
import { applyPlan } from "./apply-plan";
import { networkPolicyStep } from "./network-policy";
import { ensureDir, exists, writeFileAtomic } from "./files";
import { prepareNode, refuseOnBlocking, type PrepareRequest } from "./prepare";
import { readReceipt, receiptLocation } from "./receipt";
import { dropBootstrapKubeconfig, waitForOverlay } from "./worker-ready";

/** How long a join waits for the overlay to carry traffic both ways once the node is Ready. */
const OVERLAY_WAIT_MS = 90_000;

export interface JoinRequest extends Omit<PrepareRequest, "command"> {
  server: string;
  caHash: string;
  token: BootstrapToken;
  /** --node-ip: the host address the node advertises (default: the host's first). */
  nodeIP?: string;
  yes: boolean;
  timeoutSeconds: number;
}

export async function joinNode(ctx: Context, o: JoinRequest): Promise<number> {
  refuseRoot("join");
  const out = ctx.out;
  if (o.plan.runtime === "docker")
    throw new UserError("a worker cannot use --runtime docker yet: its kubelet port is published through RootlessKit of ours", {
      exitCode: ExitCode.Refused,
      fix: "join with the bundled containerd (leave --runtime out) or --runtime crio",
    });

  // 1. The join's preflight: nothing is written when it fails.
  const nodeName = o.plan.nodeName ?? nodeNameFrom(hostname());
  out.err(`${out.errStyle.cyan("==>")} Checking ${o.server} (the join's preflight)`);
  const facts = await joinFacts({ server: o.server, caHash: o.caHash, token: o.token, nodeName });
  const checks = runChecks(joinChecks, facts);
  const nameTaken = checks.some((c) => c.id === "join-node-name" && c.status === "fail");
  // A re-run of this host's join of the same control plane: its own overlay may hold the UDP port.
  const earlier = await readReceipt(receiptLocation(ctx.env, o.plan.prefix)).catch(() => null);
  const rejoin = (earlier?.plan as Plan | undefined)?.join?.server === o.server;
  const failing = checks.filter((c) => c.status === "fail" && c.id !== "join-node-name" && !(rejoin && c.id === "join-vxlan-port"));
  const cluster = facts.trusted?.cluster?.parameters;
  if (failing.length || !facts.caPem || !cluster) {
    for (const l of showOutcomes(failing.length ? failing : checks, out.errStyle, { name: "id" })) out.err(l);
    throw new UserError(
      `the join's preflight failed (${failing.map((c) => c.id).join(", ") || "no cluster parameters"}); nothing was written`,
      {
        exitCode: ExitCode.Refused,
        fix: "apply the fixes above; `rootless-k8s doctor --join URL --ca-hash HASH` checks again",
      },
    );
  }
  const caPem = facts.caPem;
  // This host's own earlier join of the same cluster under the same name: a re-run resumes it.
  const sameJoin = (previous: Plan | null) => previous?.join?.server === o.server && previous.node.name === nodeName;
  // The namespace's own network must not hold the control plane's address (it would be on-link there).
  const planOptions: PlanOptions = { ...o.plan, nodeName, avoidCidrs: workerAvoids(o.server, cluster) };

  // 2. This host: doctor and plan as for install, shaped into the worker's plan.
  out.err(`${out.errStyle.cyan("==>")} Checking this host`);
  const prepared = await prepareNode(
    { ...o, command: "join", plan: planOptions },
    {
      async beforePlan(_facts, _diagnosis, blocking): Promise<PlanOptions> {
        refuseOnBlocking(out, blocking, "join");
        return planOptions;
      },
      shapePlan: (plan, previous) =>
        workerPlan(plan, {
          server: o.server,
          caPem,
          caHash: o.caHash,
          cluster,
          ...(o.nodeIP ? { nodeIP: o.nodeIP } : {}),
          // A re-run of the same join keeps the range the node has.
          podCidr: sameJoin(previous) ? (previous?.cidrs.node ?? null) : null,
        }),
    },
  );
  const { plan, previous, components } = prepared;
  // The name is taken, and not by this host's own earlier join of the same cluster (a re-run resumes it).
  if (nameTaken && !sameJoin(previous)) {
    for (const l of showOutcomes(
      checks.filter((c) => c.id === "join-node-name"),
      out.errStyle,
      { name: "id" },
    ))
      out.err(l);
    throw new UserError(`a node named ${nodeName} is already in the cluster; nothing was written`, {
      exitCode: ExitCode.Refused,
      fix: "join with --node-name OTHER-NAME, or remove that node first (on its host: rootless-k8s uninstall)",
    });
  }

  out.err(out.errStyle.bold(`Worker plan for ${plan.user.name}`));
  for (const l of describePlan(plan, out.errStyle)) out.err(l);
  const prompter = createPrompter({ out, yes: o.yes, stdinIsTTY: ctx.stdinIsTTY, signal: ctx.signal });
  if (!(await prompter.confirm(`Join ${o.server} as node ${nodeName}?`, { default: true, unattended: true }))) {
    out.err("Nothing was changed.");
    return ExitCode.Ok;
  }

  const progress = await createProgress(out);
  const lock = await acquireInstallLock({ env: ctx.env, purpose: "rootless-k8s join" });
  try {
    // The token, for the kubelet's TLS bootstrap only: 0600 in the 0700 config folder, removed once Ready.
    const l = layout(plan);
    if (!(await exists(l.kubeconfigs.kubelet))) {
      await ensureDir(plan.paths.configDir, 0o700);
      const doc = bootstrapKubeconfig(o.server, pkiPaths(plan).cas.ca.cert, `${o.token.id}.${o.token.secret}`);
      await writeFileAtomic(l.kubeconfigs.kubeletBootstrap, renderKubeconfig(doc), { mode: 0o600 });
    }
    // Two passes when the node has no pod range yet (applyPlan): registered, then Ready.
    const { plan: final } = await applyPlan(ctx, {
      plan,
      previous: prepared.receipt,
      components,
      progress,
      merge: false,
      timeoutMs: o.timeoutSeconds * 1000,
      source: o.source,
    });
    await dropBootstrapKubeconfig(final);
    await networkPolicyStep(final, progress, ctx.signal);
    const s = out.style;
    out.out(
      `${s.green("✔")} Node ${final.node.name} joined ${o.server} and is Ready (mode ${final.mode.name}, Kubernetes ${final.versions.components.kubernetes}, pods ${final.cidrs.node}).`,
    );
    if (final.overlay?.enabled) {
      const overlay = await progress.step(
        "overlay",
        "Waiting for the other nodes to answer through the overlay (the pod network across hosts)",
        () => waitForOverlay(final, OVERLAY_WAIT_MS, ctx.signal),
      );
      out.out(
        `${s.green("✔")} Its pods reach the other nodes' through the overlay (UDP ${final.overlay.port}): ${overlay.peers.map((p) => `${p.node} ${p.podCidr} at ${p.publicIP}`).join(", ")}.`,
      );
    }
    out.out(`  status:     rootless-k8s status`);
    out.out(`  on the control plane: kubectl get node ${final.node.name} -o wide`);
    return ExitCode.Ok;
  } finally {
    await lock.release();
  }
}
