// Docker's plain-text output, in every shape users paste it:
//   `docker --version`   "Docker version 1.12.1, build 23cf638"
//   `docker version`     Client:/Server: sections (17.06+; "Engine:" sub-block from 17.06), or the
//                        flat pre-1.8 form "Client version: 1.0.0" / "Server version: 1.0.0"
//   `docker info`        "Server Version:", "Cgroup Driver:", "Cgroup Version:", "Security Options:"
//                        (one line before 1.13, a list after), client block from 19.03
import { posix } from "node:path";
import { upstreamVersion } from "./versions";

/** The file path of a Docker socket address ("unix:///run/user/1000/docker.sock" → "/run/user/1000/docker.sock"). */
export function dockerSocketPath(socket: string): string {
  return socket.replace(/^unix:\/\//, "");
}

/**
 * Where rootless dockerd's pid is: beside its socket (dockerd-rootless.sh's RootlessKit writes
 * docker.pid there); Docker's rootless docs enter its namespaces with
 * `nsenter -U --preserve-credentials -n -t $(cat $XDG_RUNTIME_DIR/docker.pid)`.
 */
export function dockerPidFile(socketPath: string): string {
  return posix.join(posix.dirname(socketPath), "docker.pid");
}

export interface DockerReading {
  clientVersion: string | null;
  serverVersion: string | null;
  context: string | null;
  /** Names of the server's component blocks ("containerd", "runc", "rootlesskit", ...). */
  components: string[];
  cgroupDriver: string | null;
  cgroupVersion: "1" | "2" | null;
  securityOptions: string[];
  /**
   * Where dockerd keeps images: "containerd" when its storage driver is a containerd snapshotter
   * (`driver-type: io.containerd.snapshotter.v1` under "Storage Driver:", Docker 29's default for
   * new installs, `features.containerd-snapshotter` before), which keeps the digests of what it
   * loads; "classic" for a graph driver (overlay2, fuse-overlayfs, ...), which keeps none.
   */
  imageStore: "containerd" | "classic" | null;
  /** The text had a Server section with a version (the daemon answered). */
  serverAnswered: boolean;
}

export function emptyDockerReading(): DockerReading {
  return {
    clientVersion: null,
    serverVersion: null,
    context: null,
    components: [],
    cgroupDriver: null,
    cgroupVersion: null,
    securityOptions: [],
    imageStore: null,
    serverAnswered: false,
  };
}

/** Splits text into top-level sections ("Client", "Server") by unindented "Name:" headers. */
function sections(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current = "";
  out.set(current, []);
  for (const line of text.split(/\r?\n/)) {
    const h = /^(Client|Server)\b[^:]*:\s*(.*)$/.exec(line);
    if (h && !/^(Client|Server) (version|API|Version)/i.test(line)) {
      current = h[1]!;
      out.set(current, []);
      continue;
    }
    // A section holds indented lines; an unindented line ("WARNING: ...", "Cannot connect ...") ends it.
    if (current && line.trim() && !/^\s/.test(line)) current = "";
    out.get(current)!.push(line);
  }
  return out;
}

function indentOf(line: string): number {
  return /^\s*/.exec(line)![0].length;
}

/** A "Name: value" field at the top level of a block (the block's smallest indent), not in a nested one. */
function field(lines: readonly string[], name: string): string | null {
  const filled = lines.filter((l) => l.trim());
  if (!filled.length) return null;
  const top = Math.min(...filled.map(indentOf));
  const re = new RegExp(`^\\s*${name}:\\s*(.*?)\\s*$`, "i");
  for (const l of filled) {
    const m = indentOf(l) === top ? re.exec(l) : null;
    if (m) return m[1]!;
  }
  return null;
}

/** The lines nested under the header at index at (more indented than it). */
function nested(lines: readonly string[], at: number): string[] {
  const base = indentOf(lines[at]!);
  const out: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (l.trim() && indentOf(l) <= base) break;
    out.push(l);
  }
  return out;
}

/** A printed version token, kept as printed ("17.06.0-ce", "20.10.24+dfsg1"); null for "dev" etc. */
function versionToken(v: string | null): string | null {
  return v && /^v?\d/.test(v) ? v : null;
}

export function parseDockerDashVersion(text: string): string | null {
  const m = /Docker version (\S+?),?(?:\s|$)/.exec(text);
  return m ? versionToken(m[1]!) : null;
}

export function parseDockerVersion(text: string, into: DockerReading = emptyDockerReading()): DockerReading {
  const flatClient = /^Client version:\s*(\S+)/im.exec(text);
  if (flatClient) {
    into.clientVersion ??= versionToken(flatClient[1]!);
    const flatServer = /^Server version:\s*(\S+)/im.exec(text);
    if (flatServer) {
      into.serverVersion ??= versionToken(flatServer[1]!);
      into.serverAnswered = true;
    }
    return into;
  }
  const s = sections(text);
  readClient(s.get("Client"), into);
  const server = s.get("Server");
  if (server) {
    const engineAt = server.findIndex((l) => /^\s+Engine:\s*$/.test(l));
    const engine = engineAt >= 0 ? nested(server, engineAt) : server;
    const v = field(engine, "Version");
    if (v !== null) into.serverAnswered = true;
    into.serverVersion ??= versionToken(v);
    for (const l of server) {
      const c = /^ (\S[^:]*):\s*$/.exec(l);
      if (c && c[1] !== "Engine") into.components.push(c[1]!.trim());
    }
  }
  return into;
}

/** The Client section (of `docker version` or `docker info`): its version and context, unless already known. */
function readClient(client: string[] | undefined, into: DockerReading): void {
  if (!client) return;
  into.clientVersion ??= versionToken(field(client, "Version"));
  into.context ??= field(client, "Context");
}

export function parseDockerInfo(text: string, into: DockerReading = emptyDockerReading()): DockerReading {
  const s = sections(text);
  readClient(s.get("Client"), into);
  const lines = s.get("Server") ?? s.get("")!;
  const sv = field(lines, "Server Version");
  if (sv !== null) {
    into.serverAnswered = true;
    into.serverVersion ??= versionToken(sv);
  }
  into.cgroupDriver ??= field(lines, "Cgroup Driver");
  const cv = field(lines, "Cgroup Version");
  if (cv === "1" || cv === "2") into.cgroupVersion ??= cv;
  into.securityOptions.push(...securityOptions(lines));
  into.imageStore ??= imageStore(lines);
  return into;
}

function imageStore(lines: readonly string[]): DockerReading["imageStore"] {
  const at = lines.findIndex((l) => /^\s*Storage Driver:/.test(l));
  if (at < 0) return null;
  return nested(lines, at).some((l) => /^\s*driver-type:\s*io\.containerd\.snapshotter\./.test(l)) ? "containerd" : "classic";
}

function securityOptions(lines: readonly string[]): string[] {
  const at = lines.findIndex((l) => /^\s*Security Options:/.test(l));
  if (at < 0) return [];
  const inline = lines[at]!.replace(/^\s*Security Options:\s*/, "").trim();
  if (inline) return inline.split(/\s+/);
  const indent = /^\s*/.exec(lines[at]!)![0].length;
  const out: string[] = [];
  for (const l of lines.slice(at + 1)) {
    const ind = /^\s*/.exec(l)![0].length;
    if (!l.trim() || ind <= indent) break;
    if (ind === indent + 1 || (out.length === 0 && ind > indent)) out.push(l.trim().replace(/^name=/, ""));
  }
  return out;
}

/** Rootless when the daemon says so: context "rootless", "rootless" security option, or a rootlesskit component. */
export function dockerRootless(r: DockerReading): boolean | null {
  if (r.context === "rootless" || r.securityOptions.includes("rootless") || r.components.includes("rootlesskit")) return true;
  return r.serverAnswered ? false : null;
}

/** The Docker version that matters: the engine's when it printed one, else the client's. */
export function dockerVersion(r: DockerReading): string | null {
  return upstreamVersion(r.serverVersion ?? r.clientVersion);
}
