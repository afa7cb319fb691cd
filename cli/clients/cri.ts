// A CRI v1 client: gRPC over HTTP/2 on the runtime's unix socket, with the few protobuf messages
// rootless-k8s needs written by hand (field numbers from k8s.io/cri-api pkg/apis/runtime/v1/api.proto).
// Used by `status` and `doctor --node` (is the runtime answering, which snapshotter is in use).
import * as http2 from "node:http2";
import * as net from "node:net";

// --- protobuf wire format: varints and length-delimited fields are all the CRI messages need ---
type Value = number | Buffer;

function encVarint(n: number): Buffer {
  const out: number[] = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}

/** One field: numbers/booleans as varints, strings/Buffers/nested messages length-delimited. */
export function pbField(num: number, value: string | number | boolean | Buffer | undefined | null): Buffer {
  if (value === undefined || value === null) return Buffer.alloc(0);
  if (typeof value === "boolean") value = value ? 1 : 0;
  if (typeof value === "number") return Buffer.concat([encVarint(num << 3), encVarint(value)]);
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value, "utf8");
  return Buffer.concat([encVarint((num << 3) | 2), encVarint(bytes.length), bytes]);
}

export function pbMessage(...fields: (Buffer | undefined | false)[]): Buffer {
  return Buffer.concat(fields.filter((f): f is Buffer => Buffer.isBuffer(f)));
}

/** map<string,string>: one entry message (key = 1, value = 2) per key. */
export function pbMap(num: number, obj: Record<string, string> | undefined): Buffer {
  return Buffer.concat(Object.entries(obj ?? {}).map(([k, v]) => pbField(num, pbMessage(pbField(1, k), pbField(2, v)))));
}

function decVarint(buf: Buffer, i: number): [bigint, number] {
  let r = 0n;
  let s = 0n;
  for (;;) {
    const c = buf[i++];
    if (c === undefined) throw new Error("truncated protobuf varint");
    r |= BigInt(c & 0x7f) << s;
    s += 7n;
    if (c < 0x80) return [r, i];
  }
}

/** Every [field, value] pair in order (varints as numbers, length-delimited as Buffers). */
export function pbDecode(buf: Buffer): [number, Value][] {
  const out: [number, Value][] = [];
  let i = 0;
  while (i < buf.length) {
    const [key, j] = decVarint(buf, i);
    i = j;
    const num = Number(key >> 3n);
    const type = Number(key & 7n);
    if (type === 0) {
      const [v, k] = decVarint(buf, i);
      out.push([num, Number(v)]);
      i = k;
    } else if (type === 2) {
      const [len, k] = decVarint(buf, i);
      out.push([num, buf.subarray(k, k + Number(len))]);
      i = k + Number(len);
    } else if (type === 1 || type === 5) {
      const n = type === 1 ? 8 : 4;
      out.push([num, buf.subarray(i, i + n)]);
      i += n;
    } else throw new Error(`unsupported protobuf wire type ${type}`);
  }
  return out;
}

const first = (buf: Buffer, num: number): Value | undefined => pbDecode(buf).find(([k]) => k === num)?.[1];
const all = (buf: Buffer, num: number): Value[] =>
  pbDecode(buf)
    .filter(([k]) => k === num)
    .map(([, v]) => v);
const str = (v: Value | undefined): string => (Buffer.isBuffer(v) ? v.toString("utf8") : v === undefined ? "" : String(v));
const msg = (v: Value | undefined): Buffer => (Buffer.isBuffer(v) ? v : Buffer.alloc(0));

// --- the client ---------------------------------------------------------------------------------
export class CriError extends Error {
  constructor(
    readonly method: string,
    readonly status: number | "none",
    detail: string,
  ) {
    super(`${method}: grpc-status ${status}${detail ? `: ${detail}` : ""}`);
    this.name = "CriError";
  }
}

export interface CriVersion {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface CriCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface SandboxSpec {
  name: string;
  uid: string;
  namespace: string;
  hostname?: string;
  logDirectory?: string;
  cgroupParent?: string;
  labels?: Record<string, string>;
}

export interface SandboxStatus {
  id: string;
  state: "SANDBOX_READY" | "SANDBOX_NOTREADY";
  ip: string;
}

export type ContainerState = "CONTAINER_CREATED" | "CONTAINER_RUNNING" | "CONTAINER_EXITED" | "CONTAINER_UNKNOWN";
const CONTAINER_STATES: ContainerState[] = ["CONTAINER_CREATED", "CONTAINER_RUNNING", "CONTAINER_EXITED", "CONTAINER_UNKNOWN"];

export interface CriClient {
  version(): Promise<CriVersion>;
  /** Runtime conditions (RuntimeReady, NetworkReady) and, verbose, the runtime's info map. */
  status(verbose?: boolean): Promise<{ conditions: CriCondition[]; info: Record<string, string> }>;
  listImages(): Promise<{ id: string; tags: string[] }[]>;
  runPodSandbox(s: SandboxSpec): Promise<string>;
  podSandboxStatus(id: string): Promise<SandboxStatus>;
  listPodSandboxes(): Promise<{ id: string; name: string; state: SandboxStatus["state"] }[]>;
  /** Every container the runtime knows, with its CRI state. */
  listContainers(): Promise<{ id: string; name: string; state: ContainerState }[]>;
  stopPodSandbox(id: string): Promise<void>;
  removePodSandbox(id: string): Promise<void>;
  close(): void;
}

/** A client for `unix:///path/to/socket` (or a bare path). Each call has its own timeout. */
export function criClient(endpoint: string, timeoutMs = 10_000): CriClient {
  const socket = endpoint.replace(/^unix:\/\//, "");
  let session: http2.ClientHttp2Session | null = null;
  const connect = () => {
    if (session && !session.closed && !session.destroyed) return session;
    session = http2.connect("http://localhost", { createConnection: () => net.connect(socket) });
    session.on("error", () => {});
    return session;
  };

  function call(method: string, body: Buffer = Buffer.alloc(0), ms = timeoutMs): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const frame = Buffer.alloc(5);
      frame.writeUInt32BE(body.length, 1);
      const req = connect().request({ ":method": "POST", ":path": method, "content-type": "application/grpc", te: "trailers" });
      const chunks: Buffer[] = [];
      let status: number | null = null;
      let detail = "";
      const timer = setTimeout(() => req.close(http2.constants.NGHTTP2_CANCEL), ms);
      const take = (h: http2.IncomingHttpHeaders) => {
        if (h["grpc-status"] !== undefined) {
          status = Number(h["grpc-status"]);
          detail = decodeURIComponent(String(h["grpc-message"] ?? ""));
        }
      };
      req.on("response", take);
      req.on("trailers", take);
      req.on("data", (d: Buffer) => chunks.push(d));
      req.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      req.on("close", () => {
        clearTimeout(timer);
        if (status === null) return reject(new CriError(method, "none", "the stream closed without a status (timeout or no runtime)"));
        if (status !== 0) return reject(new CriError(method, status, detail));
        const data = Buffer.concat(chunks);
        resolve(data.length >= 5 ? data.subarray(5, 5 + data.readUInt32BE(1)) : Buffer.alloc(0));
      });
      req.end(Buffer.concat([frame, body]));
    });
  }

  const RS = "/runtime.v1.RuntimeService/";
  const IS = "/runtime.v1.ImageService/";
  const sandboxState = (v: Value | undefined): SandboxStatus["state"] => (v === 1 ? "SANDBOX_NOTREADY" : "SANDBOX_READY");
  return {
    close: () => session?.close(),
    async version() {
      const r = await call(RS + "Version", pbMessage(pbField(1, "v1")));
      return {
        version: str(first(r, 1)),
        runtimeName: str(first(r, 2)),
        runtimeVersion: str(first(r, 3)),
        runtimeApiVersion: str(first(r, 4)),
      };
    },
    async status(verbose = false) {
      const r = await call(RS + "Status", pbMessage(pbField(1, verbose)));
      const conditions = all(msg(first(r, 1)), 1).map((c) => {
        const m = msg(c);
        return { type: str(first(m, 1)), status: first(m, 2) === 1, reason: str(first(m, 3)), message: str(first(m, 4)) };
      });
      const info: Record<string, string> = {};
      for (const e of all(r, 2)) info[str(first(msg(e), 1))] = str(first(msg(e), 2));
      return { conditions, info };
    },
    async listImages() {
      return all(await call(IS + "ListImages"), 1).map((img) => ({ id: str(first(msg(img), 1)), tags: all(msg(img), 2).map(str) }));
    },
    async runPodSandbox(s) {
      const meta = pbMessage(pbField(1, s.name), pbField(2, s.uid), pbField(3, s.namespace), pbField(4, 0));
      const linux = s.cgroupParent ? pbField(8, pbMessage(pbField(1, s.cgroupParent))) : undefined;
      const cfg = pbMessage(pbField(1, meta), pbField(2, s.hostname ?? s.name), pbField(3, s.logDirectory), pbMap(6, s.labels), linux);
      return str(first(await call(RS + "RunPodSandbox", pbMessage(pbField(1, cfg)), Math.max(timeoutMs, 180_000)), 1));
    },
    async podSandboxStatus(id) {
      const st = msg(first(await call(RS + "PodSandboxStatus", pbMessage(pbField(1, id))), 1));
      const network = first(st, 5);
      return { id: str(first(st, 1)), state: sandboxState(first(st, 3)), ip: network ? str(first(msg(network), 1)) : "" };
    },
    async listPodSandboxes() {
      return all(await call(RS + "ListPodSandbox"), 1).map((s) => {
        const m = msg(s);
        return { id: str(first(m, 1)), name: str(first(msg(first(m, 2)), 1)), state: sandboxState(first(m, 3)) };
      });
    },
    async listContainers() {
      return all(await call(RS + "ListContainers"), 1).map((c) => {
        const m = msg(c);
        return {
          id: str(first(m, 1)),
          name: str(first(msg(first(m, 3)), 1)),
          state: CONTAINER_STATES[Number(first(m, 6) ?? 0)] ?? "CONTAINER_UNKNOWN",
        };
      });
    },
    async stopPodSandbox(id) {
      await call(RS + "StopPodSandbox", pbMessage(pbField(1, id)));
    },
    async removePodSandbox(id) {
      await call(RS + "RemovePodSandbox", pbMessage(pbField(1, id)));
    },
  };
}
