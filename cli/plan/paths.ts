// Where everything goes, XDG throughout. --prefix moves binaries, data, config and PKI below one
// folder; units stay in ~/.config/systemd/user (the user manager reads units only from its search
// path) and sockets stay in $XDG_RUNTIME_DIR (unix socket paths must fit in 108 bytes).
import * as path from "node:path";
import { decideSupervisor } from "./supervisor";
import { ExitCode, UserError, type ExitCodeValue } from "../errors";
import { CONTROL, printable } from "../text";
import { toolDir, upRuntimeBase } from "../xdg";
import type { Facts } from "../host/facts";
import type { Paths, PlanOptions, VersionSet } from "./plan";

export const APP = "rootless-k8s";

/**
 * Every path and name rendered into a unit, a config or a script passes here first: a control
 * character (a newline above all) could add a line to a unit (`ExecStartPre=...`), so it is refused
 * outright; what remains (spaces, quotes, $, %) is quoted by each renderer for its syntax.
 */
export function refuseControl(what: string, value: string | undefined, exitCode: number = ExitCode.Refused, fix?: string): void {
  if (value === undefined || !CONTROL.test(value)) return;
  throw new UserError(
    `${what} "${printable(value)}" contains a control character; rootless-k8s renders it into systemd units and scripts, so it is refused`,
    {
      exitCode: exitCode as ExitCodeValue,
      fix: fix ?? `set ${what} to a path without control characters (newlines, tabs, escapes)`,
    },
  );
}

/**
 * The file install writes in a --prefix: the folder is rootless-k8s's own. install takes a prefix
 * that is new, empty or marked (cli/apply/prefix.ts), and uninstall --purge removes only what
 * rootless-k8s makes there.
 */
export const PREFIX_MARKER = ".rootless-k8s-prefix";

/**
 * A --prefix must be a folder of its own: never /, the home folder or one of its parents (uninstall
 * removes the prefix's folders; the home folder is never the tool's).
 */
export function checkPrefix(prefix: string, home: string): void {
  refuseControl("--prefix", prefix, ExitCode.Usage, "choose a folder of its own, e.g. --prefix ~/rootless-k8s");
  const p = path.resolve(prefix);
  const h = path.resolve(home);
  const rel = path.relative(p, h);
  const why =
    p === "/"
      ? "the root folder"
      : p === h
        ? "the home folder"
        : !rel.startsWith("..") && !path.isAbsolute(rel)
          ? "a parent of the home folder"
          : null;
  if (why) {
    throw new UserError(
      `--prefix ${p} is ${why}: rootless-k8s puts its data, configuration and PKI below the prefix, and uninstall removes them`,
      {
        exitCode: ExitCode.Usage,
        fix: `choose a folder of its own, e.g. --prefix ${path.join(h, "rootless-k8s")}`,
      },
    );
  }
}

export function planPaths(facts: Facts, options: PlanOptions, versions: VersionSet): Paths {
  const home = facts.user.home;
  if (!home || !path.isAbsolute(home)) {
    throw new UserError(`the home folder of ${facts.user.name} is unknown`, {
      exitCode: ExitCode.Refused,
      fix: "set HOME to your home folder, or give the user a home in /etc/passwd",
    });
  }
  const supervisor = decideSupervisor(facts, options).kind;
  // Under `up` (no user manager, so often no login session and no XDG_RUNTIME_DIR): a folder of the
  // user's own in /tmp, made 0700 and checked to be theirs before use (cli/apply/runtime-dir.ts).
  // Under `up` only an XDG_RUNTIME_DIR the user set and owns: a /run/user/UID found without one is a
  // login session's, which logind removes at that session's end, under the running node.
  const rt = facts.user.runtimeDir;
  const sessionDir = rt.path && rt.fromEnv && rt.exists && rt.ownedByUser ? rt.path : null;
  const runtimeBase = supervisor === "up" && !sessionDir ? upRuntimeBase(facts.user.uid) : rt.path;
  if (!runtimeBase) {
    throw new UserError("XDG_RUNTIME_DIR is not set, so the node has nowhere to put its sockets", {
      exitCode: ExitCode.Refused,
      fix: "log in directly as the user (ssh or a desktop session, not su/sudo), or run `machinectl shell USER@`",
    });
  }
  const env = options.env ?? {};
  refuseControl("HOME", home);
  refuseControl("the user name", facts.user.name);
  // Refused when set with control characters, also under `up`, which may not use it.
  refuseControl("XDG_RUNTIME_DIR", rt.fromEnv ? (rt.path ?? undefined) : undefined);
  refuseControl("XDG_RUNTIME_DIR", runtimeBase);
  for (const v of ["XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"] as const) refuseControl(v, env[v]);
  if (options.prefix) checkPrefix(options.prefix, home);
  const prefix = options.prefix ? path.resolve(options.prefix) : null;
  const shareDir = prefix ?? toolDir(env, "XDG_DATA_HOME", home);
  const configDir = prefix ? path.join(prefix, "config") : toolDir(env, "XDG_CONFIG_HOME", home);
  const cacheDir = prefix ? path.join(prefix, "cache") : toolDir(env, "XDG_CACHE_HOME", home);
  const stateDir = prefix ?? toolDir(env, "XDG_STATE_HOME", home);
  const versionsDir = path.join(shareDir, "versions");
  const versionDir = path.join(versionsDir, versions.id);
  const currentLink = path.join(versionsDir, "current");
  const runtimeDir = path.join(runtimeBase, APP);
  return {
    home,
    prefix,
    shareDir,
    versionsDir,
    versionDir,
    versionBinDir: path.join(versionDir, "bin"),
    currentLink,
    binDir: path.join(currentLink, "bin"),
    libexecDir: path.join(shareDir, "libexec"),
    dataDir: path.join(shareDir, "data"),
    configDir,
    pkiDir: path.join(configDir, "pki"),
    runtimeDir,
    rootlesskitStateDir: path.join(runtimeDir, "rootlesskit"),
    unitDir: supervisor === "up" ? path.join(configDir, "services") : path.join(home, ".config", "systemd", "user"),
    envFile: path.join(configDir, "env"),
    userEnvFile: path.join(configDir, "env.local"),
    receipt: path.join(shareDir, "receipt.json"),
    adminKubeconfig: path.join(configDir, "admin.kubeconfig"),
    userKubeconfig: path.join(home, ".kube", "config"),
    cacheDir,
    logDir: path.join(stateDir, "logs"),
  };
}
