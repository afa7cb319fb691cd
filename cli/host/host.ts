// The one door through which rootless-k8s reads the machine: files under a root directory and
// commands run with a timeout. Nothing here writes. Tests point a Host at a fixture folder
// (test/helpers/fixture-host.ts); `doctor --root DIR` points it at a mounted system image.
import { execFile } from "node:child_process";
import { promises as fsp, type Stats } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export interface FileStat {
  type: "file" | "dir" | "symlink" | "char" | "block" | "socket" | "fifo" | "other";
  /** Full st_mode (permission bits plus setuid/setgid/sticky). */
  mode: number;
  uid: number;
  gid: number;
  size: number;
}

export interface FsSpace {
  /** Bytes available to an unprivileged user (f_bavail * f_bsize). */
  freeBytes: number;
  /** statfs f_type magic, e.g. 0x6969 for NFS, 0x01021994 for tmpfs. */
  type: number;
  /** The major number of the file system's device (st_dev): 0 for one without a block device (tmpfs, NFS, fuse, ZFS, btrfs subvolumes). */
  devMajor?: number;
}

export interface RunOptions {
  /** Hard limit; the process is killed with SIGKILL when it passes. Default 2000 ms. */
  timeoutMs?: number;
  /** Extra environment; merged over the host env with LC_ALL=C. */
  env?: Record<string, string>;
  /** Written to stdin, which is otherwise closed. */
  input?: string;
}

export interface RunResult {
  /** Exit code; null when killed (timeout) or never started. */
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** The command does not exist (ENOENT), or commands are not run on this host (see Host.canRun). */
  notFound: boolean;
}

export interface Uname {
  sysname: string;
  release: string;
  /** `uname -m`: x86_64, aarch64, ... */
  machine: string;
}

export interface Host {
  /** Root of the host's file tree: "/" for this machine. */
  readonly root: string;
  /** False when commands are not run (e.g. doctor --root DIR): run() then returns notFound. */
  readonly canRun: boolean;
  /** Environment of the process (HOME, XDG_RUNTIME_DIR, PATH, SUDO_USER, ...). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Effective uid/gid of this process. */
  readonly ids: { uid: number; gid: number };
  uname(): Uname;
  /** File content as UTF-8, or null if it does not exist or cannot be read. */
  readText(p: string): Promise<string | null>;
  readDir(p: string): Promise<string[] | null>;
  /** stat(2), following links; null if absent. */
  stat(p: string): Promise<FileStat | null>;
  /** lstat(2); null if absent. */
  lstat(p: string): Promise<FileStat | null>;
  /** Target of a symlink, or null. */
  readLink(p: string): Promise<string | null>;
  /** Free space of the filesystem holding p (or its nearest existing parent). */
  statfs(p: string): Promise<FsSpace | null>;
  /** True if the calling user may write to p (access(2) W_OK). */
  writable(p: string): Promise<boolean>;
  run(cmd: string, args: string[], opts?: RunOptions): Promise<RunResult>;
}

export const DEFAULT_TIMEOUT_MS = 2000;

function typeOf(st: Stats): FileStat["type"] {
  if (st.isFile()) return "file";
  if (st.isDirectory()) return "dir";
  if (st.isSymbolicLink()) return "symlink";
  if (st.isCharacterDevice()) return "char";
  if (st.isBlockDevice()) return "block";
  if (st.isSocket()) return "socket";
  if (st.isFIFO()) return "fifo";
  return "other";
}

function fileStat(st: Stats): FileStat {
  return { type: typeOf(st), mode: st.mode, uid: st.uid, gid: st.gid, size: st.size };
}

/**
 * Reads files below a root directory. Absolute host paths ("/etc/os-release") map to
 * `<root>/etc/os-release`. Symlinks inside the tree are followed as the OS follows them,
 * which for a fixture root means relative links only.
 */
export class FileRoot {
  constructor(readonly root: string) {}

  resolve(p: string): string {
    if (this.root === "/") return p;
    return path.join(this.root, path.resolve("/", p));
  }
  async readText(p: string): Promise<string | null> {
    try {
      return await fsp.readFile(this.resolve(p), "utf8");
    } catch {
      return null;
    }
  }
  async readDir(p: string): Promise<string[] | null> {
    try {
      return (await fsp.readdir(this.resolve(p))).sort();
    } catch {
      return null;
    }
  }
  async stat(p: string): Promise<FileStat | null> {
    return fsp.stat(this.resolve(p)).then(fileStat, () => null);
  }
  async lstat(p: string): Promise<FileStat | null> {
    return fsp.lstat(this.resolve(p)).then(fileStat, () => null);
  }
  async readLink(p: string): Promise<string | null> {
    try {
      return await fsp.readlink(this.resolve(p));
    } catch {
      return null;
    }
  }
  async statfs(p: string): Promise<FsSpace | null> {
    let cur = path.resolve("/", p);
    for (;;) {
      try {
        const s = await fsp.statfs(this.resolve(cur));
        const dev = (await fsp.stat(this.resolve(cur), { bigint: true })).dev;
        // glibc's major(): bits 8-19 and 32-43 of st_dev.
        const devMajor = Number(((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn));
        return { freeBytes: Number(s.bavail) * Number(s.bsize), type: Number(s.type), devMajor };
      } catch {
        const up = path.dirname(cur);
        if (up === cur) return null;
        cur = up;
      }
    }
  }
  async writable(p: string): Promise<boolean> {
    try {
      await fsp.access(this.resolve(p), 2 /* W_OK */);
      return true;
    } catch {
      return false;
    }
  }
}

/** Runs a real command with a hard timeout; never throws. */
export function runCommand(
  cmd: string,
  args: string[],
  opts: RunOptions = {},
  baseEnv: NodeJS.ProcessEnv = process.env,
): Promise<RunResult> {
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      args,
      {
        timeout,
        killSignal: "SIGKILL",
        maxBuffer: 8 * 1024 * 1024,
        encoding: "utf8",
        env: { ...baseEnv, LC_ALL: "C", LANG: "C", ...opts.env },
      },
      (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { killed?: boolean; signal?: string | null; code?: number | string }) | null;
        if (e && e.code === "ENOENT") {
          resolve({ code: null, stdout: "", stderr: String(e.message), timedOut: false, notFound: true });
          return;
        }
        const timedOut = !!e && e.killed === true && e.signal === "SIGKILL";
        const code = !e ? 0 : typeof e.code === "number" ? e.code : null;
        resolve({ code, stdout: String(stdout), stderr: String(stderr), timedOut, notFound: false });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

export interface LocalHostOptions {
  /** Read files under this directory instead of "/". Commands are then not run. */
  root?: string;
  env?: NodeJS.ProcessEnv;
}

/** This machine (or, with root, a system image mounted at root: files only). */
export function localHost(opts: LocalHostOptions = {}): Host {
  const root = opts.root ? path.resolve(opts.root) : "/";
  const files = new FileRoot(root);
  const env = opts.env ?? process.env;
  const canRun = root === "/";
  return {
    root,
    canRun,
    env,
    ids: { uid: process.getuid?.() ?? -1, gid: process.getgid?.() ?? -1 },
    uname: () => ({ sysname: os.type(), release: os.release(), machine: os.machine() }),
    readText: (p) => files.readText(p),
    readDir: (p) => files.readDir(p),
    stat: (p) => files.stat(p),
    lstat: (p) => files.lstat(p),
    readLink: (p) => files.readLink(p),
    statfs: (p) => files.statfs(p),
    writable: (p) => files.writable(p),
    run: (cmd, args, o) =>
      canRun
        ? runCommand(cmd, args, o, env)
        : Promise.resolve({ code: null, stdout: "", stderr: `not run: host files are read from ${root}`, timedOut: false, notFound: true }),
  };
}

/** Finds an executable on the host's PATH (under its root). */
export async function which(host: Host, name: string, extraDirs: string[] = []): Promise<string | null> {
  if (name.includes("/")) return (await isExecutable(host, name)) ? name : null;
  const dirs = [...(host.env.PATH ?? "/usr/local/bin:/usr/bin:/bin").split(":"), ...extraDirs].filter((d) => d.startsWith("/"));
  for (const d of dirs) {
    const p = path.posix.join(d, name);
    if (await isExecutable(host, p)) return p;
  }
  return null;
}

async function isExecutable(host: Host, p: string): Promise<boolean> {
  const st = await host.stat(p);
  return !!st && st.type === "file" && (st.mode & 0o111) !== 0;
}
