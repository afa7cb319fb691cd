// Where everything goes, XDG throughout. --prefix moves binaries, data, config and PKI below one
// folder; units stay in ~/.config/systemd/user (the user manager reads units only from its search
// path) and sockets stay in $XDG_RUNTIME_DIR (unix socket paths must fit in 108 bytes).
import * as path from "node:path";
import { ExitCode, UserError } from "../errors";
import { toolDir } from "../xdg";
import type { Facts } from "../host/facts";
import type { Paths, PlanOptions, VersionSet } from "./plan";

export const APP = "rootless-k8s";

export function planPaths(facts: Facts, options: PlanOptions, versions: VersionSet): Paths {
  const home = facts.user.home;
  if (!home || !path.isAbsolute(home)) {
    throw new UserError(`the home folder of ${facts.user.name} is unknown`, {
      exitCode: ExitCode.Refused,
      fix: "set HOME to your home folder, or give the user a home in /etc/passwd",
    });
  }
  const runtimeBase = facts.user.runtimeDir.path;
  if (!runtimeBase) {
    throw new UserError("XDG_RUNTIME_DIR is not set, so the node has nowhere to put its sockets", {
      exitCode: ExitCode.Refused,
      fix: "log in directly as the user (ssh or a desktop session, not su/sudo), or run `machinectl shell USER@`",
    });
  }
  const env = options.env ?? {};
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
    unitDir: path.join(home, ".config", "systemd", "user"),
    envFile: path.join(configDir, "env"),
    userEnvFile: path.join(configDir, "env.local"),
    receipt: path.join(shareDir, "receipt.json"),
    adminKubeconfig: path.join(configDir, "admin.kubeconfig"),
    userKubeconfig: path.join(home, ".kube", "config"),
    cacheDir,
    logDir: path.join(stateDir, "logs"),
  };
}
