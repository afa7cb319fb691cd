// Bootstrap tokens on the installed control plane (`rootless-k8s token`): create one (with the join
// objects cli/render/join.ts renders, applied first), list them, delete one. A new token is handed
// out only once the controller-manager's bootstrapsigner has signed cluster-info with it, so the
// line it prints works at once; when that does not happen the token is deleted again.
import { randomInt } from "node:crypto";
import { ExitCode, UserError, messageOf } from "../errors";
import {
  type BootstrapToken,
  CLUSTER_INFO,
  TOKEN_SECRET_PREFIX,
  TOKEN_SECRET_TYPE,
  caHashOf,
  jwsProblem,
} from "../host/parse/bootstrap-token";
import type { Plan } from "../plan/plan";
import { joinObjects, joinServerUrl, tokenSecret } from "../render/join";
import { sleep } from "../wait";
import { FIELD_MANAGER, objectPath, patiently } from "./addons";
import { type ApiClient, apiClient, apiMessage, readKubeconfig } from "../clients/kubernetes";
import { advertisedIP } from "../plan/node";
import type { SystemdUser } from "../clients/systemd";
import { admitNodes } from "./admits-nodes";

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const randomText = (n: number) => Array.from({ length: n }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");

/** A fresh token: 6 + 16 characters from a CSPRNG (about 83 bits in the secret). */
export function newToken(): BootstrapToken {
  return { id: randomText(6), secret: randomText(16) };
}

const SECRETS = "/api/v1/namespaces/kube-system/secrets";
const CLUSTER_INFO_PATH = `/api/v1/namespaces/${CLUSTER_INFO.namespace}/configmaps/${CLUSTER_INFO.name}`;

/** The admin's client, once the API server answers /readyz; refused (exit 3) when it does not. */
async function adminClient(plan: Plan): Promise<{ client: ApiClient; caPem: string }> {
  const creds = await readKubeconfig(plan.paths.adminKubeconfig);
  const client = apiClient(creds);
  const r = await patiently(() => client.get("/readyz", 5000), { budgetMs: 15_000 }).catch((e: unknown) => ({
    status: 0,
    body: messageOf(e),
  }));
  if (r.status !== 200)
    throw new UserError(`the node's API server does not answer at ${creds.server} (${r.status ? `HTTP ${r.status}` : r.body})`, {
      exitCode: ExitCode.Refused,
      fix: "run `rootless-k8s status`; start the node with `rootless-k8s install` if it is down",
    });
  return { client, caPem: creds.ca.toString("utf8") };
}

function refusedBy(what: string, r: { status: number; body: string }): UserError {
  return new UserError(`${what}: HTTP ${r.status}: ${apiMessage(r.body)}`, {
    fix: "`rootless-k8s logs kube-apiserver` shows why the API server refused it",
  });
}

export interface CreatedToken {
  /** The on-demand units this token started (the node's first: the overlay agent and the approver). */
  started: string[];
  token: BootstrapToken;
  server: string;
  caHash: string;
  expiration: string;
}

export interface CreateOptions {
  ttlSeconds: number;
  description: string;
  /** --server: the URL other hosts reach the API server at (default: the host's first address). */
  server?: string | undefined;
  /** The user manager that starts the on-demand units (cli/apply/admits-nodes.ts). */
  systemd: SystemdUser;
  /** How long to wait for the bootstrapsigner's signature (default 60 s). */
  signTimeoutMs?: number;
  signal?: AbortSignal | undefined;
}

export async function createToken(plan: Plan, o: CreateOptions): Promise<CreatedToken> {
  const server = joinServerUrl(plan, o.server);
  if (!server)
    throw new UserError("this host has no address but loopback, so no other host can reach its API server", {
      exitCode: ExitCode.Refused,
      fix: "pass --server https://ADDRESS:PORT, the address other hosts reach this one at",
    });
  if (advertisedIP(plan) === plan.network.namespaceIP) {
    const host = new URL(server).hostname;
    throw new UserError(
      `this control plane advertises its namespace's address ${plan.network.namespaceIP}, which pods on other hosts cannot reach (the \`kubernetes\` Service, the node's address)`,
      {
        exitCode: ExitCode.Refused,
        fix: `advertise a host address first: rootless-k8s install --node-ip ${plan.pki.hostAddresses.includes(host) ? host : (plan.pki.hostAddresses[0] ?? "ADDRESS")} (with the flags the node was installed with; the namespace restarts once)`,
      },
    );
  }
  const { client, caPem } = await adminClient(plan);
  // The overlay and the approver first: a token is handed out only by a node ready for its join.
  const started = await admitNodes(plan, o.systemd, o.signal);
  for (const obj of joinObjects(plan, server, caPem)) {
    const r = await patiently(() => client.apply(objectPath(obj), obj, FIELD_MANAGER, 30_000), { signal: o.signal });
    if (r.status !== 200 && r.status !== 201) throw refusedBy(`could not apply ${obj.kind} ${obj.metadata.name}`, r);
  }
  let token: BootstrapToken;
  let secret: ReturnType<typeof tokenSecret>;
  let r: { status: number; body: string };
  // A random id already taken (1 in 2 billion) gets one more try.
  for (let tries = 2; ; ) {
    token = newToken();
    secret = tokenSecret(token, { now: new Date(), ttlSeconds: o.ttlSeconds, description: o.description });
    r = await client.post(SECRETS, secret);
    if (r.status !== 409 || --tries === 0) break;
  }
  if (r.status !== 201) throw refusedBy("could not create the token's Secret", r);
  try {
    await waitForSignature(client, token, o.signTimeoutMs ?? 60_000, o.signal);
  } catch (e) {
    await client.delete(`${SECRETS}/${TOKEN_SECRET_PREFIX}${token.id}`).catch(() => undefined);
    throw e;
  }
  return {
    token,
    server,
    caHash: caHashOf(caPem),
    expiration: String((secret.stringData as Record<string, string>).expiration),
    started,
  };
}

/** Until cluster-info carries a valid signature by `token` (the bootstrapsigner's work, usually within a second). */
async function waitForSignature(client: ApiClient, token: BootstrapToken, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "cluster-info was not read";
  for (;;) {
    const r = await client.get(CLUSTER_INFO_PATH).catch((e: unknown) => ({ status: 0, body: messageOf(e) }));
    if (r.status === 200) {
      const data = (JSON.parse(r.body) as { data?: Record<string, string> }).data ?? {};
      const jws = data[`${CLUSTER_INFO.jwsPrefix}${token.id}`];
      const content = data[CLUSTER_INFO.kubeconfigKey] ?? "";
      const problem = jws ? jwsProblem(jws, content, token) : null;
      if (jws && !problem) return;
      last = jws ? `its signature does not verify (${problem})` : "it has no signature for the token yet";
    } else last = `HTTP ${r.status}`;
    if (Date.now() > deadline)
      throw new UserError(
        `the controller-manager did not sign cluster-info with the new token within ${timeoutMs / 1000} s (${last}); the token was deleted`,
        {
          fix: "`rootless-k8s logs kube-controller-manager` should show the bootstrapsigner; re-run `rootless-k8s install` to restart it with its flags",
        },
      );
    await sleep(500, signal);
  }
}

export interface TokenInfo {
  id: string;
  expiration: string | null;
  description: string;
  groups: string[];
}

/** Every bootstrap token of the cluster, from their Secrets (never their secret part). */
export async function listTokens(plan: Plan): Promise<TokenInfo[]> {
  const { client } = await adminClient(plan);
  const r = await client.get(`${SECRETS}?fieldSelector=${encodeURIComponent(`type=${TOKEN_SECRET_TYPE}`)}`);
  if (r.status !== 200) throw refusedBy("could not list the tokens", r);
  const items = (JSON.parse(r.body) as { items?: { data?: Record<string, string> }[] }).items ?? [];
  const text = (d: Record<string, string> | undefined, k: string) => (d?.[k] ? Buffer.from(d[k], "base64").toString("utf8") : "");
  return items
    .map((s) => ({
      id: text(s.data, "token-id"),
      expiration: text(s.data, "expiration") || null,
      description: text(s.data, "description"),
      groups: text(s.data, "auth-extra-groups").split(",").filter(Boolean),
    }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

/** Deletes one token by its id: false when there was none. */
export async function deleteToken(plan: Plan, id: string): Promise<boolean> {
  const { client } = await adminClient(plan);
  const r = await client.delete(`${SECRETS}/${TOKEN_SECRET_PREFIX}${id}`);
  if (r.status === 404) return false;
  if (r.status !== 200 && r.status !== 202) throw refusedBy(`could not delete token ${id}`, r);
  return true;
}
