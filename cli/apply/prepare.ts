// The read-only front half of install and upgrade: facts (cli/host) → doctor (cli/doctor) → the
// receipt of the node already there → plan (cli/plan), with the kubelet of the version set probed.
// Nothing is changed. The caller builds the request: install from its flags, upgrade from the
// installed node's receipt; the dry run reports what it returns, install and upgrade act on it.
import { selfCommand } from "../self-command";
import { supervisorOf } from "../plan/supervisor";
import * as path from "node:path";
import { checkPrefixFolder } from "./prefix";
import { ExitCode, UserError, refuseRoot } from "../errors";
import type { Facts } from "../host/facts";
import { archOf, gatherFacts } from "../host/gather";
import { localHost, type Host } from "../host/host";
import { probeKubelet } from "../host/kubelet";
import { parseContainerdVersion } from "../host/parse/versions";
import { diagnose, type CheckOutcome, type Diagnosis } from "../doctor/index";
import { blockingFailures } from "../doctor/blocking";
import { apiPortRequest, choosePort, type PortChoice } from "../doctor/port-choice";
import { showOutcomes } from "../doctor/present";
import type { Output } from "../ui/output";
import { buildPlan, planPaths, validatePlan } from "../plan/index";
import { withNodeRange } from "../plan/network";
import { roleConflict } from "../plan/worker";
import type { Plan, PlanOptions } from "../plan/plan";
import { loadComponents, type ComponentSource, type Components } from "./components";
import { readReceipt, type Receipt } from "./receipt";

/** What the front half needs: no command-line flags, only the decisions they stand for. */
export interface PrepareRequest {
  /** The command on whose behalf this runs, for the refusal as root ("refusing to install as root"). */
  command: "install" | "upgrade" | "join";
  env: NodeJS.ProcessEnv;
  /** The plan's choices: from the flags (install), or the installed node's own (upgrade). */
  plan: PlanOptions;
  /** Where the version set comes from (built-in manifest, --manifest, --bundle, --mirror). */
  source: ComponentSource;
  /** Failing doctor checks the user chose to go ahead despite (--ignore-check). */
  ignoreChecks: string[];
}

export interface Prepared {
  host: Host;
  facts: Facts;
  diagnosis: Diagnosis;
  /** The failing doctor checks that stop install and upgrade (doctor/blocking.ts): the dry run reports them. */
  blocking: CheckOutcome[];
  /** The manifest and version set the plan is built for, and that install fetches. */
  components: Components;
  plan: Plan;
  /** The receipt at the plan's place (also one of an uninstalled node, whose data is kept), if any. */
  receipt: Receipt | null;
  /** The plan of the node already installed (from the receipt), if any. */
  previous: Plan | null;
}

/** Lets the real install stop on failing checks and ask its questions before the plan is built. */
export interface PrepareHooks {
  /** Called with the facts, the doctor's verdict, the checks that stop it and the installed node's plan; returns the plan options to use. */
  beforePlan?(facts: Facts, diagnosis: Diagnosis, blocking: CheckOutcome[], previous: Plan | null): Promise<PlanOptions>;
  /** Turns this host's plan into the one to run (a join: the worker's), before it is validated. */
  shapePlan?(plan: Plan, previous: Plan | null): Plan;
}

/**
 * Facts → doctor → plan, read-only. Throws UserError(3) for root, an unusable choice or a bad plan;
 * returns failing checks for the caller to judge (the dry run reports them, install stops).
 * `loaded`: the components when the caller has them already (upgrade); else they are loaded from
 * the request's source, by the same rule install fetches with (cli/apply/components.ts).
 */
export async function prepareNode(req: PrepareRequest, hooks: PrepareHooks = {}, loaded?: Components): Promise<Prepared> {
  refuseRoot(req.command);
  const host = localHost({ env: req.env });
  const components = loaded ?? (await loadComponents(req.source, archOf(host.uname().machine), req.env));
  const versions = components.versions;
  // With --prefix, doctor judges the folder and the rootlesskit path the node will really use.
  const prefix = req.plan.prefix;
  // (The ports asked for are set below, once the receipt says which API port the node has.)
  const gathered = await gatherFacts(host, {
    ...(prefix ? { dataDir: prefix, rootlesskitPath: path.join(prefix, "versions", "current", "bin", "rootlesskit") } : {}),
  });

  // The receipt's place depends only on the paths (--prefix, XDG, home), which no question changes.
  const paths = planPaths(gathered, req.plan, versions);
  // Once planPaths has refused / and the home folder (exit 2): a prefix holding the user's own files.
  if (paths.prefix) await checkPrefixFolder(paths.prefix);
  const receipt = await readReceipt(paths.receipt);
  const previous = receipt && receipt.state !== "uninstalled" ? ((receipt.plan as Plan | null) ?? null) : null;
  const conflict = roleConflict(req.command, previous);
  if (conflict) throw conflict;
  // The API port asked for: --api-port, else the installed node's, else 6443; the node's own ports
  // are no obstacle while this user holds them (doctor/port-choice.ts, the rule doctor reads too).
  const facts: Facts = {
    ...gathered,
    network: {
      ...gathered.network,
      wantedPorts: [req.plan.apiPort ?? previous?.ports.apiServer ?? 6443],
      apiPortFixed: req.plan.apiPort !== undefined,
      ownPorts: previous?.network.published.map((x) => x.hostPort) ?? [],
    },
  };
  const diagnosis = diagnose(facts);
  const blocking = blockingFailures(diagnosis.outcomes, req.ignoreChecks);
  const apiPort = apiPortChoice(facts);
  // Without --api-port, the plan takes the port the rule gives (the dry run shows it); install asks.
  let options: PlanOptions = { ...req.plan, ...(apiPort.kind !== "taken" && { apiPort: apiPort.port }) };
  if (hooks.beforePlan) options = await hooks.beforePlan(facts, diagnosis, blocking, previous);
  options.selfCommand ??= selfCommand();
  // An installed node keeps what runs it unless --supervisor says otherwise (a user manager that
  // appeared since must not leave an `up` node beside a second copy in systemd).
  if (previous && !options.supervisor) options.supervisor = supervisorOf(previous);
  if (options.runtimeBin) {
    const r = await host.run(options.runtimeBin, ["--version"], { timeoutMs: 5000 });
    if (r.notFound)
      throw new UserError(`--runtime-bin ${options.runtimeBin}: no such program`, {
        exitCode: ExitCode.Refused,
        fix: "give the full path of a containerd binary",
      });
    options.runtimeBinVersion = parseContainerdVersion(r.stdout + r.stderr).version;
  }
  // Probe the kubelet of this version set if it is installed already: a patched one may offer
  // the "none" cgroup driver. Not installed yet: stock settings (they work with any kubelet).
  let plan = buildPlan(facts, options, versions);
  const kubelet = await probeKubelet(host, path.join(plan.paths.versionBinDir, "kubelet"));
  if (kubelet) plan = buildPlan(facts, { ...options, kubelet }, versions);
  // The node keeps the pod range the controller-manager gave it, while its name and pod network stay.
  if (previous?.cidrs.node && previous.cidrs.pods === plan.cidrs.pods && previous.node.name === plan.node.name)
    plan = { ...plan, cidrs: withNodeRange(plan.cidrs, previous.cidrs.node) };
  if (hooks.shapePlan) plan = hooks.shapePlan(plan, previous);
  validatePlan(plan, facts, { previous });
  return { host, facts, diagnosis, blocking, components, plan, receipt, previous };
}

/** The API port by the one rule (doctor/port-choice.ts), from the facts prepareNode completed with the receipt. */
export function apiPortChoice(facts: Facts): PortChoice {
  return choosePort(facts.network.listeners, apiPortRequest(facts.network, facts.user.uid));
}

/** Shows the checks that stop `command` (install, upgrade) with their fixes, and refuses (exit 3). */
export function refuseOnBlocking(out: Output, blocking: readonly CheckOutcome[], command: "install" | "upgrade" | "join"): void {
  if (!blocking.length) return;
  for (const l of showOutcomes(blocking, out.errStyle, { name: "id" })) out.err(l);
  throw new UserError(
    `doctor found ${blocking.length} problem${blocking.length === 1 ? "" : "s"} that stop${blocking.length === 1 ? "s" : ""} the ${command} (${blocking.map((x) => x.id).join(", ")})`,
    {
      exitCode: ExitCode.Refused,
      fix: "apply the fixes above (the root ones at once: rootless-k8s doctor --root-script | sudo sh), or go ahead anyway with --ignore-check ID",
    },
  );
}
