// Errors a user can act on. Every failure that reaches main() is turned into one line
// ("error: <what happened>") plus an optional "fix:" line, and a documented exit code.
// Nothing else is printed: no stack traces unless ROOTLESS_K8S_DEBUG=1.

/** Exit codes. Documented in README.md ("Exit codes"); keep both in step. */
export const ExitCode = {
  /** Success. For doctor: nothing failed (warnings allowed). */
  Ok: 0,
  /** A check failed, the node is unhealthy, or an operation failed. */
  Failure: 1,
  /** Bad usage: unknown command or flag, missing or malformed argument. */
  Usage: 2,
  /** Refused before changing anything: a precondition is not met (root, unusable plan, skew...). */
  Refused: 3,
  /** A download or checksum could not be verified; nothing unverified was installed. */
  Verification: 4,
  /** The network failed after retries (timeouts, DNS, 5xx, 404). */
  Network: 5,
  /** Another rootless-k8s run holds the install lock. */
  Locked: 6,
  /** status: the node is installed and stopped (every unit inactive): `rootless-k8s start` starts it. */
  Stopped: 7,
  /** Interrupted (SIGINT/SIGTERM). The machine is as it was, or resumable by re-running. */
  Interrupted: 130,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** An error meant for the user: a one-line message, the exact fix, and an exit code. */
export class UserError extends Error {
  readonly exitCode: ExitCodeValue;
  readonly fix: string | undefined;
  constructor(message: string, opts: { exitCode?: ExitCodeValue; fix?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "UserError";
    this.exitCode = opts.exitCode ?? ExitCode.Failure;
    this.fix = opts.fix;
  }
}

/** Bad command line. main() prints the message and the command's usage, then exits 2. */
export class UsageError extends UserError {
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message, { exitCode: ExitCode.Usage });
    this.name = "UsageError";
    this.command = command;
  }
}

/** Raised when SIGINT/SIGTERM arrives during a step that is safe to abandon. */
export class InterruptedError extends UserError {
  constructor(message = "interrupted") {
    super(message, {
      exitCode: ExitCode.Interrupted,
      fix: "re-run the same command to continue where it stopped",
    });
    this.name = "InterruptedError";
  }
}

/** An error a system call returned (ENOSPC, EACCES, ...: it names its code and syscall), not a bug or a parse error. */
export function isSystemError(e: unknown): e is NodeJS.ErrnoException {
  const err = e as Partial<NodeJS.ErrnoException> | null;
  return !!err && typeof err.code === "string" && typeof err.syscall === "string";
}

/**
 * A file-system failure the user can act on (a full disk, a folder they may not write) as one line
 * naming the path, with the fix; null for anything else, which stays a bug report.
 */
export function fileSystemError(e: unknown): UserError | null {
  if (!isSystemError(e)) return null;
  const err = e;
  const where = typeof err.path === "string" ? err.path : null;
  switch (err.code) {
    case "ENOSPC":
    case "EDQUOT":
      return new UserError(
        `no space left on the device${where ? ` of ${where}` : ""} (${err.code === "EDQUOT" ? "disk quota exceeded" : "disk full"})`,
        {
          fix: "free some space there and re-run the same command (it continues where it stopped)",
          cause: e,
        },
      );
    case "EACCES":
    case "EPERM":
    case "EROFS":
      return new UserError(
        `cannot ${err.syscall} ${where ?? "a file"}: ${err.code === "EROFS" ? "read-only file system" : "permission denied"}`,
        {
          fix: "make the folder writable by you, or choose another place (--prefix DIR, XDG_DATA_HOME, XDG_CACHE_HOME), and re-run",
          cause: e,
        },
      );
    default:
      return null;
  }
}

/** One-line text of any thrown value, for messages. */
export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message.split("\n")[0] ?? String(e);
  return String(e);
}

/** Refuses root: the node belongs to an ordinary user, in that user's systemd. */
export function refuseRoot(command: string): void {
  if (process.getuid?.() === 0) {
    throw new UserError(`refusing to ${command} as root: rootless-k8s runs the node as an ordinary user`, {
      exitCode: ExitCode.Refused,
      fix: "run it as the user who will own the node (root only prepares the host: rootless-k8s doctor --root-script | sudo sh)",
    });
  }
}
