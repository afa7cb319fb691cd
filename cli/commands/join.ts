// `rootless-k8s join URL --ca-hash sha256:H`: this host's node joins another host's control plane as
// a worker. Thin: flags → cli/apply/join.ts. The token comes from the environment or a file, never
// from the command line, where `ps` shows it to every user.
import { opt, type CommandSpec, type Parsed } from "../args";
import { joinCredentials } from "./join-args";
import { joinNode } from "../apply/join";
import type { Context } from "../context";
import { UsageError } from "../errors";
import { isServerUrl } from "../host/parse/bootstrap-token";
import { TOKEN_ENV } from "../render/join";
import { installOptions, spec as installSpec } from "./install";

const SHARED = [
  "mode",
  "runtime",
  "network",
  "prefix",
  "node-name",
  "taint-none",
  "yes",
  "ignore-check",
  "timeout",
  "mirror",
  "manifest",
  "bundle",
  "trust-bundle",
  "ca-file",
  "supervisor",
  "no-network-policy",
] as const;

export const spec: CommandSpec = {
  name: "join",
  summary: "Join another host's cluster as a worker node",
  usage: `rootless-k8s join https://HOST:PORT --ca-hash sha256:HASH [--token-file FILE] [--node-ip ADDR] [options]   (token in ${TOKEN_ENV})`,
  description: `
Runs this host's node as a worker of the control plane at URL: the runtime, the kubelet and
kube-proxy, no etcd and no control plane. On the control plane, \`rootless-k8s token create\` prints
the line to run here. First the join's preflight (as \`rootless-k8s doctor --join\`: the API server
reached, its CA matching --ca-hash, the token valid, the node name free): when a check fails,
nothing is written. Then this host's checks and plan as for install; the kubelet gets its
certificates from the control plane (TLS bootstrap), and the node its pod range.

The control plane reaches the kubelet at this host's address (--node-ip, default the first that is
not loopback), on port 10250, which RootlessKit publishes: open it to the control plane's host.

Exit status: 0 joined and Ready, 1 failed while joining (re-run the same line to resume),
2 bad usage (also a --token-file its group or others may read), 3 refused (a failing check, a
worker newer than the control plane).`,
  options: {
    "ca-hash": { type: "string", valueName: "sha256:HASH", description: "The pin of the cluster's CA, from the join line" },
    "token-file": {
      type: "string",
      valueName: "FILE",
      description: `Read the token (ID.SECRET) from FILE (- for standard input) instead of ${TOKEN_ENV}; a file its group or others may read is refused (chmod 600 FILE)`,
    },
    "node-ip": {
      type: "string",
      valueName: "ADDR",
      description: "The host address the node advertises (default: the host's first that is not loopback)",
    },
    ...Object.fromEntries(SHARED.map((k) => [k, installSpec.options?.[k]]).filter(([, v]) => v)),
  },
  positionals: [{ name: "URL", description: "The control plane's API server, https://HOST:PORT (from the join line)", required: true }],
  environment: [{ name: TOKEN_ENV, description: "The bootstrap token, ID.SECRET" }],
  examples: [`${TOKEN_ENV}=abcdef.0123456789abcdef rootless-k8s join https://192.0.2.2:6443 --ca-hash sha256:…`],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  const [server, ...extra] = parsed.positionals;
  if (!server) throw new UsageError("join needs the control plane's URL (from the join line)", spec.name);
  if (extra.length) throw new UsageError(`join takes one URL (got also "${extra.join(" ")}")`, spec.name);
  if (!isServerUrl(server)) throw new UsageError(`"${server}" is not an https://HOST:PORT URL`, spec.name);
  const { caHash, token } = joinCredentials(ctx, parsed, spec.name, "join");
  const nodeIP = opt.str(parsed, "node-ip");
  // The install flags a worker shares, checked by the same rules.
  const shared = installOptions(parsed, ctx);
  return joinNode(ctx, {
    env: ctx.env,
    plan: shared.plan,
    source: shared.source,
    ignoreChecks: shared.ignoreChecks,
    server: server.replace(/\/$/, ""),
    caHash,
    token,
    ...(nodeIP ? { nodeIP } : {}),
    yes: opt.bool(parsed, "yes"),
    timeoutSeconds: shared.timeoutSeconds,
  });
}
