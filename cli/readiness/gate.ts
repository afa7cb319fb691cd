// A unit's start gate (`rootless-k8s wait`, its ExecStartPre=; cli/plan/start.ts decides which unit
// waits for what): polls a peer's health endpoint with the credential the component itself will use
// until it answers 200, within a bound. Read-only: it changes nothing, and exits at once on SIGTERM
// (systemctl stop), so a stop never waits for a gate.
import { promises as fsp } from "node:fs";
import { ExitCode, UserError } from "../errors";
import { sleep } from "../wait";
import { apiClient, gitVersionOf, readKubeconfig, type ApiClient, type KubeconfigCreds } from "../clients/kubernetes";
import { bootstrappedAt, readyzPath } from "./bootstrap";

export interface GateTarget {
  /** What waits for: "the API server", "etcd". */
  what: string;
  client: ApiClient;
  /** The health path: /readyz for the API server, /health for etcd (once known: see choosePath). */
  path: string;
  /**
   * Asked before each poll until it returns a path, which then replaces `path`: null while what it
   * needs cannot be read yet, with the reason (the API server's /version before it serves).
   */
  choosePath?: () => Promise<{ path: string } | { notYet: string }>;
}

/**
 * The API server as the kubeconfig reaches it: /readyz is ok only once its bootstrap hooks ran. With
 * `marker` (cli/readiness/bootstrap.ts), once the server answers /version, a node whose marker says
 * this etcd passed them at that very version waits without the two that poll once a second.
 */
export async function apiGate(kubeconfig: string, marker?: string): Promise<GateTarget> {
  const client = apiClient(await readCreds(() => readKubeconfig(kubeconfig), kubeconfig));
  const target: GateTarget = { what: "the API server", client, path: "/readyz" };
  if (!marker) return target;
  target.choosePath = async () => {
    const v = await client.get("/version", 3000);
    if (v.status !== 200) return { notYet: `/version: HTTP ${v.status}` };
    return { path: readyzPath(await bootstrappedAt(marker, gitVersionOf(v.body))) };
  };
  return target;
}

/** etcd at `endpoint`, with a client certificate it trusts (the API server's own). */
export async function etcdGate(endpoint: string, files: { ca: string; cert: string; key: string }): Promise<GateTarget> {
  const creds = await readCreds(
    async (): Promise<KubeconfigCreds> => ({
      server: endpoint,
      ca: await fsp.readFile(files.ca),
      cert: await fsp.readFile(files.cert),
      key: await fsp.readFile(files.key),
    }),
    [files.ca, files.cert, files.key].join(", "),
  );
  return { what: "etcd", client: apiClient(creds), path: "/health" };
}

async function readCreds(read: () => Promise<KubeconfigCreds>, what: string): Promise<KubeconfigCreds> {
  try {
    return await read();
  } catch (e) {
    if (e instanceof UserError) throw e;
    throw new UserError(`cannot read the credential to wait with (${what}): ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, {
      exitCode: ExitCode.Refused,
      fix: "re-run `rootless-k8s install`, which writes it",
    });
  }
}

export interface GateResult {
  waitedMs: number;
  polls: number;
}

/**
 * Polls `target` until it answers 200: every 100 ms for the first 10 s, then every 500 ms. Throws a
 * UserError (exit 1) with the last answer when `timeoutMs` passes, InterruptedError on the signal.
 */
export async function waitForGate(target: GateTarget, timeoutMs: number, signal?: AbortSignal): Promise<GateResult> {
  const start = Date.now();
  let last = "no answer yet";
  for (let polls = 1; ; polls++) {
    try {
      const chosen = target.choosePath ? await target.choosePath() : { path: target.path };
      if ("notYet" in chosen) last = chosen.notYet;
      else {
        target.path = chosen.path;
        target.choosePath = undefined;
        const r = await target.client.get(target.path, 3000);
        if (r.status === 200) return { waitedMs: Date.now() - start, polls };
        last = `HTTP ${r.status} ${r.body.trim().split("\n").slice(-1)[0] ?? ""}`.trim();
      }
    } catch (e) {
      last = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    }
    const left = start + timeoutMs - Date.now();
    if (left <= 0)
      throw new UserError(
        `${target.what} at ${target.client.server} did not answer ${target.path} ok within ${Math.round(timeoutMs / 1000)} s (last: ${last})`,
        { fix: `see \`rootless-k8s status\` and \`rootless-k8s logs ${target.what === "etcd" ? "etcd" : "kube-apiserver"}\`` },
      );
    await sleep(Math.min(Date.now() - start < 10_000 ? 100 : 500, left), signal);
  }
}
