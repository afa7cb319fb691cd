// A Host backed by a fixture folder: test/fixtures/hosts/<name>/
//   root/        the files of the host, at their real paths (etc/os-release, proc/self/cgroup, ...)
//   host.json    what cannot be a file: uname, the process env and ids, statfs answers, the
//                recorded output of each command ("docker version" -> {stdout, stderr, code}), and
//                stat answers git cannot carry (device nodes, sockets, setuid bits, owners)
//   SOURCE.md    where every file and output came from (public sources only)
// A command with no recording behaves as "not installed".
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FileRoot, type FileStat, type FsSpace, type Host, type RunResult } from "../../cli/host/host";

export const FIXTURE_HOSTS = join(import.meta.dirname, "..", "fixtures", "hosts");

export interface RecordedCommand {
  stdout?: string;
  stderr?: string;
  code?: number;
  timedOut?: boolean;
}

export interface HostJson {
  uname: { sysname?: string; release: string; machine: string };
  env: Record<string, string>;
  ids: { uid: number; gid: number };
  /** Longest-prefix match on the path asked for. */
  statfs?: Record<string, FsSpace>;
  /** Keyed by "<basename of cmd> <args joined by spaces>", e.g. "docker version". */
  commands?: Record<string, RecordedCommand>;
  /**
   * stat() answers by host path, for what git cannot store: "/dev/net/tun": {"type": "char", "mode": "0666"},
   * "/usr/bin/newuidmap": {"mode": "4755", "uid": 0}. Mode is octal text; the path need not exist under root/.
   */
  stat?: Record<string, { type?: FileStat["type"]; mode: string; uid?: number; gid?: number }>;
}

export interface FixtureHost extends Host {
  /** Commands asked for, in order, as "<basename> <args>" (to assert what was probed). */
  readonly calls: string[];
}

export function fixtureHost(nameOrDir: string, overrides: Partial<HostJson> = {}): FixtureHost {
  const dir = nameOrDir.includes("/") ? nameOrDir : join(FIXTURE_HOSTS, nameOrDir);
  const json = JSON.parse(readFileSync(join(dir, "host.json"), "utf8")) as HostJson;
  const spec: HostJson = { ...json, ...overrides, env: { ...json.env, ...overrides.env } };
  const files = new FileRoot(join(dir, "root"));
  const calls: string[] = [];
  const statOf = async (p: string, real: (p: string) => Promise<FileStat | null>): Promise<FileStat | null> => {
    const o = spec.stat?.[p];
    if (!o) return real(p);
    const base = await real(p);
    const type = o.type ?? base?.type ?? "file";
    const kind = { file: 0o100000, dir: 0o040000, char: 0o020000, socket: 0o140000 }[type as string] ?? 0;
    return { type, mode: kind | parseInt(o.mode, 8), uid: o.uid ?? 0, gid: o.gid ?? 0, size: base?.size ?? 0 };
  };
  /** access(W_OK) from the recorded owner and mode bits; plain fixture files count as writable. */
  const writable = async (p: string): Promise<boolean> => {
    const o = spec.stat?.[p];
    if (!o) return (await files.stat(p)) !== null;
    const mode = parseInt(o.mode, 8);
    if (spec.ids.uid === 0) return true;
    return (o.uid ?? 0) === spec.ids.uid ? (mode & 0o200) !== 0 : (mode & 0o002) !== 0;
  };
  return {
    root: files.root,
    canRun: true,
    env: spec.env,
    ids: spec.ids,
    calls,
    uname: () => ({ sysname: spec.uname.sysname ?? "Linux", release: spec.uname.release, machine: spec.uname.machine }),
    readText: (p) => files.readText(p),
    readDir: (p) => files.readDir(p),
    stat: (p) => statOf(p, (q) => files.stat(q)),
    lstat: (p) => statOf(p, (q) => files.lstat(q)),
    readLink: (p) => files.readLink(p),
    writable,
    statfs: async (p) => {
      const entries = Object.entries(spec.statfs ?? {}).filter(([k]) => p === k || p.startsWith(k.endsWith("/") ? k : k + "/"));
      entries.sort((a, b) => b[0].length - a[0].length);
      return entries[0]?.[1] ?? null;
    },
    run: async (cmd, args): Promise<RunResult> => {
      const key = [cmd.split("/").pop(), ...args].join(" ");
      calls.push(key);
      const rec = spec.commands?.[key];
      if (!rec) return { code: null, stdout: "", stderr: `${cmd}: not found`, timedOut: false, notFound: true };
      return {
        code: rec.timedOut ? null : (rec.code ?? 0),
        stdout: rec.stdout ?? "",
        stderr: rec.stderr ?? "",
        timedOut: rec.timedOut ?? false,
        notFound: false,
      };
    },
  };
}
