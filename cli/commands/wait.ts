// `rootless-k8s wait api|etcd ...`: a unit's start gate (its ExecStartPre=, cli/plan/start.ts):
// returns once the peer the component needs answers its health endpoint, so the component never
// starts too early, fails and is restarted. Thin: the wait is cli/readiness/gate.ts.
import { opt, type CommandSpec, type Parsed } from "../args";
import { apiGate, etcdGate, waitForGate } from "../readiness/gate";
import type { Context } from "../context";
import { ExitCode, UsageError } from "../errors";
import { GATE_TIMEOUT_S } from "../plan/start";

export const spec: CommandSpec = {
  name: "wait",
  summary: "Wait until the API server or etcd is ready (the node's units run it before they start)",
  usage:
    "rootless-k8s wait api --kubeconfig FILE [--bootstrap-marker FILE] [--timeout SECONDS] | etcd --endpoint URL --ca FILE --cert FILE --key FILE [--timeout SECONDS]",
  description: `
The node's units run it as ExecStartPre=, so each component starts only once the peer it needs is
ready: the API server waits for etcd's /health, and on the control-plane node everything that talks
to the API server waits for its /readyz (ok once its bootstrap hooks, RBAC included, have run). On
a node whose marker (--bootstrap-marker) says this etcd passed them at the version the API server
reports, it waits without the two hooks that poll once a second and only re-create what etcd holds.
It uses the component's own credential, from where the component runs. You do not need to run it.

Exit status: 0 once ready, 1 when the timeout passed (the unit then fails and systemd restarts it),
2 bad usage, 3 when the credential cannot be read, 130 when stopped.`,
  positionals: [{ name: "peer", description: "api or etcd", required: true, choices: ["api", "etcd"] }],
  options: {
    kubeconfig: { type: "string", valueName: "FILE", description: "api: the component's kubeconfig" },
    endpoint: { type: "string", valueName: "URL", description: "etcd: its client URL (https://127.0.0.1:2379)" },
    ca: { type: "string", valueName: "FILE", description: "etcd: the CA its certificate is checked against" },
    cert: { type: "string", valueName: "FILE", description: "etcd: a client certificate it trusts" },
    key: { type: "string", valueName: "FILE", description: "etcd: that certificate's key" },
    "bootstrap-marker": {
      type: "string",
      valueName: "FILE",
      description: "api: the marker of the version and etcd data whose bootstrap this node passed",
    },
    timeout: { type: "string", valueName: "SECONDS", description: `Give up after this long (default ${GATE_TIMEOUT_S})` },
  },
  examples: ["rootless-k8s wait api --kubeconfig ~/.config/rootless-k8s/scheduler.kubeconfig --timeout 30"],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const peer = args.positionals[0];
  const timeoutS = opt.int(args, "timeout", 1, 86_400, spec.name) ?? GATE_TIMEOUT_S;
  const need = (name: string) => {
    const v = opt.str(args, name);
    if (!v) throw new UsageError(`wait ${peer} needs --${name}`, spec.name);
    return v;
  };
  const only = (name: string, of: string) => {
    if (opt.str(args, name) !== undefined) throw new UsageError(`--${name} is for wait ${of} only`, spec.name);
  };
  if (peer === "etcd") only("bootstrap-marker", "api");
  if (peer === "api") for (const n of ["endpoint", "ca", "cert", "key"]) only(n, "etcd");
  const target =
    peer === "api"
      ? await apiGate(need("kubeconfig"), opt.str(args, "bootstrap-marker"))
      : peer === "etcd"
        ? await etcdGate(need("endpoint"), { ca: need("ca"), cert: need("cert"), key: need("key") })
        : null;
  if (!target) throw new UsageError(`unknown peer "${peer}" (use api or etcd)`, spec.name);
  const r = await waitForGate(target, timeoutS * 1000, ctx.signal);
  ctx.out.out(`${target.what} is ready (${target.path} ok at ${target.client.server}) after ${(r.waitedMs / 1000).toFixed(1)} s`);
  return ExitCode.Ok;
}
