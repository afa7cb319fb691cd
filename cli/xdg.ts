// The tool's own folder in each XDG base directory: below an absolute $XDG_*_HOME, else below its
// default in the home folder (a relative value is ignored, as the spec says). One rule for the plan's
// paths (cli/plan/paths.ts), and for what commands find before any plan exists: the receipt, the
// install lock, the download cache, the update check's state. Light: imported at start-up.
import { homedir } from "node:os";
import * as path from "node:path";
import { BIN_NAME } from "./version";

const DEFAULTS = {
  XDG_DATA_HOME: [".local", "share"],
  XDG_CONFIG_HOME: [".config"],
  XDG_CACHE_HOME: [".cache"],
  XDG_STATE_HOME: [".local", "state"],
} as const;

export type XdgBase = keyof typeof DEFAULTS;

/** <$XDG_…_HOME or its default below `home`>/rootless-k8s. `home`: default $HOME, else the passwd entry's. */
export function toolDir(env: Readonly<Record<string, string | undefined>>, base: XdgBase, home: string = env.HOME || homedir()): string {
  const v = env[base];
  return path.join(v && path.isAbsolute(v) ? v : path.join(home, ...DEFAULTS[base]), BIN_NAME);
}

/**
 * The parent of the node's runtime folder under `rootless-k8s up` when the user has no runtime
 * folder (no login session, so no /run/user/UID, and no XDG_RUNTIME_DIR): the user's own folder in
 * /tmp, made 0700 and checked to be theirs before use, as podman falls back to /tmp/podman-run-UID.
 */
export function upRuntimeBase(uid: number): string {
  return `/tmp/${BIN_NAME}-${uid}`;
}
