// `rootless-k8s token create|list|delete`: bootstrap tokens on the installed control plane, for
// another host's join. Thin: flags → cli/apply/token.ts → the line to copy.
import { opt, type CommandSpec, type Parsed } from "../args";
import { serviceManager } from "../clients/supervisor";
import { selfCommand } from "../self-command";
import { createToken, deleteToken, listTokens } from "../apply/token";
import { installedPlan } from "../apply/images";
import { ExitCode, UsageError, UserError } from "../errors";
import { TOKEN_ID_PATTERN, isServerUrl } from "../host/parse/bootstrap-token";
import { joinCheckLine, joinLine, TOKEN_ENV } from "../render/join";
import { parseDuration } from "./durations";
import type { Context } from "../context";

const ACTIONS = ["create", "list", "delete"] as const;
const DEFAULT_TTL = "24h";
/**
 * The longest --ttl: 7 days. A token is a bearer secret: until it expires it gets any host that
 * holds it a kubelet certificate of the cluster. kubeadm's --ttl has no upper bound (0: never
 * expires); its default became 24 h in 1.8 instead of never (kubernetes/kubeadm#343, area/security).
 * A week covers a join planned ahead; a later join gets a new token.
 */
export const MAX_TTL_SECONDS = 7 * 24 * 3600;
const MAX_TTL = "168h";

export const spec: CommandSpec = {
  name: "token",
  summary: "Create, list or delete bootstrap tokens for another host's join",
  usage:
    "rootless-k8s token create [--ttl DURATION] [--description TEXT] [--server URL] [--json]  |  token list [--json]  |  token delete ID",
  description: `
A bootstrap token lets another host prove it may join this node's cluster, as kubeadm's do: a
Secret in kube-system that expires (--ttl, default ${DEFAULT_TTL}, at most ${MAX_TTL}: 7 days; the
controller-manager deletes it then). \`create\` also publishes cluster-info in kube-public (the CA
and the server, readable by anyone: nothing secret) and waits until the controller-manager has
signed it with the new token, then prints two lines to run on the other host: its preflight (it
changes nothing), and the join,

  ${TOKEN_ENV}=ID.SECRET rootless-k8s doctor --join https://ADDRESS:PORT --ca-hash sha256:HASH
  ${TOKEN_ENV}=ID.SECRET rootless-k8s join https://ADDRESS:PORT --ca-hash sha256:HASH

The token goes in the environment, never on a command line, where \`ps\` shows it to every user,
or in a file only you may read (chmod 600 FILE, then \`join --token-file FILE\`): join and doctor
--join refuse a token file its group or others may read (exit 2). The CA hash (sha256 of the CA's
public key) lets the other host check it talks to this API server.

Exit status: 0 done, 1 the API server refused, 2 bad usage, 3 no node installed or not running
(or this host has no address but loopback: pass --server).`,
  options: {
    ttl: {
      type: "string",
      valueName: "DURATION",
      description: `How long the token is valid: 90s, 30m, 24h, at most ${MAX_TTL} (7 days) (default ${DEFAULT_TTL})`,
    },
    description: { type: "string", valueName: "TEXT", description: "A note kept with the token (shown by `token list`)" },
    server: {
      type: "string",
      valueName: "URL",
      description: "The API server's URL from other hosts (default: https://<this host's first address>:<API port>)",
    },
    json: { type: "boolean", description: "Print the result as JSON" },
    prefix: { type: "string", valueName: "DIR", description: "The --prefix the node was installed with" },
  },
  positionals: [
    { name: "action", description: "create, list or delete", required: true, choices: ACTIONS },
    { name: "ID", description: "delete: the token's id (its 6 characters before the dot)" },
  ],
  examples: [
    "rootless-k8s token create",
    "rootless-k8s token create --ttl 1h --server https://node1.example.org:6443",
    "rootless-k8s token delete abcdef",
  ],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  const [action, id, ...extra] = parsed.positionals;
  if (!ACTIONS.includes(action as (typeof ACTIONS)[number]))
    throw new UsageError(`unknown action "${action}" (use ${ACTIONS.join(", ")})`, spec.name);
  if (action !== "delete" && id !== undefined) throw new UsageError(`token ${action} takes no argument (got "${id}")`, spec.name);
  if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`, spec.name);
  const json = opt.bool(parsed, "json");
  const ttlText = opt.str(parsed, "ttl") ?? DEFAULT_TTL;
  const ttlSeconds = parseDuration(ttlText);
  if (ttlSeconds === null) throw new UsageError(`--ttl "${ttlText}" is not a duration (use 90s, 30m or 24h)`, spec.name);
  if (ttlSeconds > MAX_TTL_SECONDS)
    throw new UsageError(
      `--ttl "${ttlText}" is longer than ${MAX_TTL} (7 days), the longest a join token may live: use --ttl ${MAX_TTL} or less, and a new token for a later join`,
      spec.name,
    );
  const server = opt.str(parsed, "server");
  if (server !== undefined && !isServerUrl(server)) throw new UsageError(`--server "${server}" is not an https://HOST:PORT URL`, spec.name);
  if (action !== "create")
    for (const o of ["ttl", "description", "server"])
      if (opt.str(parsed, o) !== undefined) throw new UsageError(`--${o} works with token create only`, spec.name);
  if (action === "delete" && id === undefined) throw new UsageError("token delete needs the token's ID", spec.name);
  if (action === "delete" && !TOKEN_ID_PATTERN.test(id!.split(".")[0]!))
    throw new UsageError(`"${id}" is not a token id (6 characters of a-z and 0-9)`, spec.name);
  const plan = await installedPlan(ctx.env, opt.str(parsed, "prefix"));
  if (action === "create") {
    const t = await createToken(plan, {
      ttlSeconds,
      description: opt.str(parsed, "description") ?? `made by rootless-k8s token create on ${plan.node.name}`,
      server,
      signal: ctx.signal,
      systemd: serviceManager(plan, { env: ctx.env, self: selfCommand() }),
    });
    if (t.started.length) ctx.out.err(`started ${t.started.join(", ")}: the node now admits other nodes (they start with it from now on)`);
    if (json) {
      ctx.out.out(
        JSON.stringify({ token: `${t.token.id}.${t.token.secret}`, server: t.server, caHash: t.caHash, expiration: t.expiration }, null, 2),
      );
    } else {
      ctx.out.err(
        `token ${t.token.id} expires ${t.expiration}; on the other host, as its user: the first line checks it can join (changes nothing), the second joins:`,
      );
      ctx.out.out(joinCheckLine(t.server, t.token, t.caHash));
      ctx.out.out(joinLine(t.server, t.token, t.caHash));
    }
    return ExitCode.Ok;
  }
  if (action === "list") {
    const tokens = await listTokens(plan);
    if (json) ctx.out.out(JSON.stringify(tokens, null, 2));
    else if (!tokens.length) ctx.out.err("no bootstrap tokens");
    else {
      ctx.out.out(`${"ID".padEnd(8)}${"EXPIRES".padEnd(22)}DESCRIPTION`);
      for (const t of tokens) ctx.out.out(`${t.id.padEnd(8)}${(t.expiration ?? "never").padEnd(22)}${t.description}`);
    }
    return ExitCode.Ok;
  }
  const tokenId = id!.split(".")[0]!;
  if (!(await deleteToken(plan, tokenId)))
    throw new UserError(`no bootstrap token ${tokenId}`, {
      exitCode: ExitCode.Failure,
      fix: "`rootless-k8s token list` shows the tokens there are",
    });
  ctx.out.err(`deleted token ${tokenId}`);
  return ExitCode.Ok;
}
