// A Host backed by a fixture folder: test/fixtures/hosts/<name>/
//   root/        the files of the host, at their real paths (etc/os-release, proc/self/cgroup, ...)
//   host.json    what cannot be a file: uname, the process env and ids, statfs answers, and the
//                recorded output of each command ("docker version" -> {stdout, stderr, code})
//   SOURCE.md    where every file and output came from (public sources only)
// A command with no recording behaves as "not installed".
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FileRoot, type FsSpace, type Host, type RunResult } from "../../cli/host/host";

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
  return {
    root: files.root,
    canRun: true,
    env: spec.env,
    ids: spec.ids,
    calls,
    uname: () => ({ sysname: spec.uname.sysname ?? "Linux", release: spec.uname.release, machine: spec.uname.machine }),
    readText: (p) => files.readText(p),
    readDir: (p) => files.readDir(p),
    stat: (p) => files.stat(p),
    lstat: (p) => files.lstat(p),
    readLink: (p) => files.readLink(p),
    writable: async (p) => (await files.stat(p)) !== null,
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
