// `rootless-k8s approver run --kubeconfig FILE`: the kubelet serving-certificate approver, as a
// server's rootless-k8s-csr-approver.service runs it. It approves the kubelet-serving CSRs of the
// nodes that joined, each checked against its Node (cli/plan/csr-approval.ts), until SIGTERM.
// Thin: the loop is cli/agents/csr-approver.ts.
import { opt, type CommandSpec, type Parsed } from "../args";
import { runApprover } from "../agents/csr-approver";
import { apiClient, readKubeconfig } from "../clients/kubernetes";
import type { Context } from "../context";
import { ExitCode, UsageError } from "../errors";

export const spec: CommandSpec = {
  name: "approver",
  summary: "Approve joined nodes' kubelet serving certificates (run by rootless-k8s-csr-approver.service)",
  usage: "rootless-k8s approver run --kubeconfig FILE",
  description: `
\`run\` is what a control plane's approver unit runs. A worker's kubelet asks the control plane for
its serving certificate (a CertificateSigningRequest of signer kubernetes.io/kubelet-serving); the
controller-manager signs it once approved, but never approves it. The approver approves exactly a
request of a node for itself: requested by system:node:NAME, for that name, with the addresses its
Node reports, for serving only. Any other is left pending (never denied), with the reason in the
unit's log. You do not run it yourself: \`systemctl --user status rootless-k8s-csr-approver\`.`,
  positionals: [{ name: "action", description: "run", required: true }],
  options: {
    kubeconfig: {
      type: "string",
      valueName: "FILE",
      description: "The kubeconfig install wrote (~/.config/rootless-k8s/csr-approver.kubeconfig)",
    },
  },
  examples: ["systemctl --user status rootless-k8s-csr-approver", "rootless-k8s logs csr-approver"],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const action = args.positionals[0];
  if (action !== "run") throw new UsageError(`unknown action "${action}" (use run)`, spec.name);
  const kubeconfig = opt.str(args, "kubeconfig");
  if (!kubeconfig) throw new UsageError("approver run needs --kubeconfig FILE", spec.name);
  const client = apiClient(await readKubeconfig(kubeconfig));
  await runApprover(client, { signal: ctx.signal, log: (line) => ctx.out.out(`${new Date().toISOString()} ${line}`) });
  return ExitCode.Ok;
}
