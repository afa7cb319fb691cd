// The kubelet serving-certificate approver, on the control-plane host: worker kubelets run with
// serverTLSBootstrap and ask for their serving certificates with CertificateSigningRequests of
// signer kubernetes.io/kubelet-serving, which kube-controller-manager signs once approved but never
// approves. This approves exactly the legitimate ones (the rule: cli/plan/csr-approval.ts): for
// each pending request it reads the request (cli/host/parse/csr.ts) and the Node its requester
// names, decides, and approves the way `kubectl certificate approve` does (a PUT of the object with
// an Approved condition to its approval subresource, so a request changed meanwhile is refused with
// a 409 and looked at again). A refused one is left pending, never denied, with its reason logged.
//
// approvePending is one pass (a one-shot command, the tests); runApprover lists, then watches from
// the list's resourceVersion and decides on every ADDED or MODIFIED request as it arrives, and lists
// again when the watch ends (the server's timeoutSeconds: so a request left pending because its
// Node had no addresses yet is looked at again), expires or breaks, backing off while the API
// server fails; until the AbortSignal aborts. The identity it runs as needs the RBAC of
// cli/render/approver-rbac.ts.
import { UserError } from "../errors";
import { type ParsedRequest, parseCsrRequest } from "../host/parse/csr";
import { type CsrObject, csrState, decideServingCsr, type NodeObject, servingCsrNodeName } from "../plan/csr-approval";
import { sleep } from "../wait";
import { type ApiClient, type ApiResponse, apiMessage, type WatchEvent } from "../clients/kubernetes";

export const CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
/** The reason of the Approved condition it writes (kubectl writes KubectlApprove). */
export const APPROVAL_REASON = "RootlessK8sApproved";

/** What the approver asks of the API server: reads, watches and the approval's PUT. */
export type ApproverApi = Pick<ApiClient, "get" | "watch" | "put">;

export interface ApprovalPass {
  approved: string[];
  /** Pending requests left pending, each with why. Requests already decided are in neither list. */
  left: { name: string; reason: string }[];
}

type Outcome = { approved: boolean; reason: string };

function errorText(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  return String(err?.message ?? e).split("\n")[0] || err?.code || "error";
}

const timestamp = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

/** The request with an Approved condition added: the body of the PUT to its approval subresource. */
export function withApproval(csr: CsrObject, message: string, now: Date): CsrObject {
  return {
    ...csr,
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    status: {
      ...csr.status,
      conditions: [
        ...(csr.status?.conditions ?? []),
        { type: "Approved", status: "True", reason: APPROVAL_REASON, message, lastUpdateTime: timestamp(now) },
      ],
    },
  };
}

const csrPath = (name: string) => `${CSR_PATH}/${encodeURIComponent(name)}`;

/**
 * Decides on one request and approves it when the rule says so; null when it is not pending (or
 * is gone). Failures to reach the API server throw; its refusals are outcomes with the reason.
 */
async function consider(api: ApproverApi, first: CsrObject, now: () => Date): Promise<Outcome | null> {
  let csr = first;
  for (let attempt = 0; ; attempt++) {
    if (csrState(csr) !== "pending") return null;
    const nodeName = servingCsrNodeName(csr);
    let node: NodeObject | null = null;
    let parsed: ParsedRequest | null = null;
    if (nodeName !== null) {
      const r = await api.get(`/api/v1/nodes/${encodeURIComponent(nodeName)}`, 10_000);
      if (r.status === 200) node = JSON.parse(r.body) as NodeObject;
      else if (r.status !== 404)
        return { approved: false, reason: `node ${nodeName} could not be read: HTTP ${r.status} ${apiMessage(r.body)}` };
      parsed = await parseCsrRequest(csr.spec.request ?? "");
    }
    const d = decideServingCsr(csr, parsed, node);
    if (!d.approve) return { approved: false, reason: d.reason };
    const r = await api.put(`${csrPath(csr.metadata.name)}/approval`, withApproval(csr, `rootless-k8s: ${d.reason}`, now()), 10_000);
    if (r.status === 200 || r.status === 201) return { approved: true, reason: d.reason };
    if (r.status === 409 && attempt === 0) {
      // Changed since it was read: read it again and decide on what it is now.
      const again = await api.get(csrPath(csr.metadata.name), 10_000);
      if (again.status === 404) return null;
      if (again.status === 200) {
        csr = JSON.parse(again.body) as CsrObject;
        continue;
      }
    }
    return { approved: false, reason: `the API server refused the approval: HTTP ${r.status} ${apiMessage(r.body)}` };
  }
}

const line = (name: string, o: Outcome) => (o.approved ? `approved ${name}: ${o.reason}` : `left ${name} pending: ${o.reason}`);

/** One pass over every CertificateSigningRequest: approves the legitimate pending ones; one log line per decision. */
export async function approvePending(
  client: ApproverApi,
  log: (line: string) => void,
  opts: { now?: () => Date } = {},
): Promise<ApprovalPass> {
  const now = opts.now ?? (() => new Date());
  const fix = "check that the API server answers (`rootless-k8s status`) and that this user may list CertificateSigningRequests";
  let r: ApiResponse;
  try {
    r = await client.get(CSR_PATH, 30_000);
  } catch (e) {
    throw new UserError(`could not list CertificateSigningRequests: ${errorText(e)}`, { fix, cause: e });
  }
  if (r.status !== 200)
    throw new UserError(`listing CertificateSigningRequests was refused: HTTP ${r.status} ${apiMessage(r.body)}`, { fix });
  const pass: ApprovalPass = { approved: [], left: [] };
  for (const csr of (JSON.parse(r.body) as { items?: CsrObject[] }).items ?? []) {
    const name = csr.metadata.name;
    let o: Outcome | null;
    try {
      o = await consider(client, csr, now);
    } catch (e) {
      o = { approved: false, reason: `the API server could not be reached: ${errorText(e)}` };
    }
    if (!o) continue;
    log(line(name, o));
    if (o.approved) pass.approved.push(name);
    else pass.left.push({ name, reason: o.reason });
  }
  return pass;
}

export interface ApproverTiming {
  /** The server ends each watch after this long (timeoutSeconds); then everything is listed again. */
  watchSeconds: number;
  /** Pause before listing again after a watch ended; the first pause after a failure. */
  retryMs: number;
  /** The longest pause after failures in a row (the pause doubles each time). */
  maxRetryMs: number;
}

export const DEFAULT_APPROVER_TIMING: ApproverTiming = { watchSeconds: 60, retryMs: 1000, maxRetryMs: 30_000 };

/**
 * Lists and watches CertificateSigningRequests, approving the legitimate pending ones as they come,
 * until `signal` aborts; then returns once the request in flight is done. A decision is logged once
 * per request and outcome (a request left pending is looked at again at every list, and said again
 * only when its reason changes).
 */
export async function runApprover(
  client: ApproverApi,
  opts: { signal: AbortSignal; log: (line: string) => void; timing?: Partial<ApproverTiming>; now?: () => Date },
): Promise<void> {
  const { signal, log } = opts;
  const t = { ...DEFAULT_APPROVER_TIMING, ...opts.timing };
  const now = opts.now ?? (() => new Date());
  /** The last line said about each request. */
  const said = new Map<string, string>();
  let failures = 0;
  let lastProblem = "";
  const problem = (text: string) => {
    failures++;
    if (text !== lastProblem) log(`${text}; trying again`);
    lastProblem = text;
  };
  const recovered = () => {
    failures = 0;
    lastProblem = "";
  };
  const pause = (ms: number) => sleep(ms, signal).catch(() => {});

  const handle = async (csr: CsrObject) => {
    const name = csr.metadata.name;
    try {
      const o = await consider(client, csr, now);
      if (!o) return;
      const text = line(name, o);
      if (said.get(name) !== text) log(text);
      said.set(name, text);
    } catch (e) {
      if (!signal.aborted) log(`could not decide on ${name}: ${errorText(e)}`);
    }
  };

  while (!signal.aborted) {
    let rv = "";
    try {
      const r = await client.get(CSR_PATH, 30_000);
      if (r.status !== 200) throw new Error(`HTTP ${r.status} ${apiMessage(r.body)}`);
      const list = JSON.parse(r.body) as { metadata?: { resourceVersion?: string }; items?: CsrObject[] };
      rv = list.metadata?.resourceVersion ?? "";
      const items = list.items ?? [];
      const names = new Set(items.map((c) => c.metadata.name));
      for (const k of said.keys()) if (!names.has(k)) said.delete(k);
      for (const csr of items) {
        if (signal.aborted) return;
        await handle(csr);
      }
    } catch (e) {
      if (signal.aborted) return;
      problem(`no list of CertificateSigningRequests: ${errorText(e)}`);
      await pause(Math.min(t.retryMs * 2 ** (failures - 1), t.maxRetryMs));
      continue;
    }

    // Requests are decided one after the other, in the order their events came.
    let queue = Promise.resolve();
    let expired = false;
    let failed = false;
    const url = `${CSR_PATH}?watch=1&allowWatchBookmarks=true&timeoutSeconds=${t.watchSeconds}&resourceVersion=${encodeURIComponent(rv)}`;
    try {
      const r = await client.watch(
        url,
        (e: WatchEvent) => {
          if (e.type === "ERROR") {
            // 410 Gone: the resourceVersion is too old; list again. Anything else is a failure.
            if (e.object.code === 410) expired = true;
            else {
              failed = true;
              problem(`the watch of CertificateSigningRequests ended with an error: ${e.object.message ?? JSON.stringify(e.object)}`);
            }
            return;
          }
          if (e.type === "BOOKMARK") return;
          const csr = e.object as unknown as CsrObject;
          if (e.type === "DELETED") said.delete(csr.metadata.name);
          else queue = queue.then(() => handle(csr));
        },
        { signal, idleMs: (t.watchSeconds + 30) * 1000 },
      );
      await queue;
      if (r.status === 410) expired = true;
      else if (r.status !== 200) {
        failed = true;
        problem(`the watch of CertificateSigningRequests was refused: HTTP ${r.status} ${apiMessage(r.body)}`);
      }
    } catch (e) {
      await queue;
      if (signal.aborted) return;
      failed = true;
      problem(`the watch of CertificateSigningRequests broke: ${errorText(e)}`);
    }
    if (!failed) recovered();
    await pause(failed ? Math.min(t.retryMs * 2 ** (failures - 1), t.maxRetryMs) : expired ? 0 : t.retryMs);
  }
}
