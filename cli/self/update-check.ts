// The background update check, in the way of npm's update-notifier and `deno upgrade`: after a
// command on a terminal, at most once a day, a detached copy of this binary fetches
// <base>/latest.txt and records it; a newer release is announced in one line, at most once a day.
// Off under CI, off the terminal, and with ROOTLESS_K8S_NO_UPDATE_CHECK=1.
// State: $XDG_CACHE_HOME/rootless-k8s/update-check.json (default ~/.cache/...).
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isSea } from "node:sea";
import { isCI } from "../ui/output";
import { BIN_NAME } from "../version";
import { toolDir } from "../xdg";
import { fetchText, normalizeVersion, releaseUrl, resolveBaseUrl } from "./releases";

/** The hidden first argument that makes the binary run the check itself (the detached child). */
export const UPDATE_CHECK_ARG = "__update-check";

export const UPDATE_CHECK_INTERVAL_MS = 24 * 60 * 60 * 1000;

/** Commands after which no check runs: self-upgrade checks by itself; completion output is sourced at every shell start. */
const QUIET_COMMANDS = new Set(["self-upgrade", "completion"]);

export interface UpdateState {
  /** When the last check started (ms since the epoch). */
  checkedAt?: number;
  /** The latest version found, and at which base. */
  latest?: string;
  baseUrl?: string;
  /** When the user was last told about `latest`. */
  notifiedAt?: number;
}

export function updateCheckEnabled(env: NodeJS.ProcessEnv, onTerminal: boolean, command: string): boolean {
  if (env.ROOTLESS_K8S_NO_UPDATE_CHECK === "1" || isCI(env)) return false;
  return onTerminal && !QUIET_COMMANDS.has(command);
}

export function stateFile(env: NodeJS.ProcessEnv): string {
  return join(toolDir(env, "XDG_CACHE_HOME"), "update-check.json");
}

/**
 * What to do now, from the recorded state (pure): the line to print, if any, and whether to start
 * a new check. `newer(a, b)` is true when release a is newer than b.
 */
export function decide(
  state: UpdateState,
  now: number,
  current: string,
  baseUrl: string,
  newer: (a: string, b: string) => boolean,
): { notice?: string; check: boolean } {
  const sameBase = state.baseUrl === baseUrl;
  const check = !sameBase || !state.checkedAt || now - state.checkedAt >= UPDATE_CHECK_INTERVAL_MS || state.checkedAt > now;
  const due = !state.notifiedAt || now - state.notifiedAt >= UPDATE_CHECK_INTERVAL_MS || state.notifiedAt > now;
  if (sameBase && state.latest && due && newer(state.latest, current)) {
    return {
      check,
      notice: `A new release of ${BIN_NAME} is available: ${current} → ${state.latest}. Run \`${BIN_NAME} self-upgrade\` to install it.`,
    };
  }
  return { check };
}

export function readState(file: string): UpdateState {
  try {
    const v = JSON.parse(readFileSync(file, "utf8")) as unknown;
    return v && typeof v === "object" ? (v as UpdateState) : {};
  } catch {
    return {};
  }
}

export function writeState(file: string, state: UpdateState): void {
  mkdirSync(join(file, ".."), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(state) + "\n", { mode: 0o600 });
  renameSync(tmp, file);
}

export interface AfterCommand {
  command: string;
  env: NodeJS.ProcessEnv;
  /** stderr is a terminal (the notice goes there). */
  onTerminal: boolean;
  version: string;
  notify(line: string): void;
  now?: number;
}

/** Runs after every command: prints a due notice, and starts a detached check once a day. Never throws. */
export async function afterCommand(a: AfterCommand): Promise<void> {
  if (!updateCheckEnabled(a.env, a.onTerminal, a.command)) return;
  try {
    const semver = await import("semver");
    // Only latest.txt is read, for a notice; nothing is installed from it, so an http base is accepted.
    const base = resolveBaseUrl(undefined, a.env, { insecureHttp: true });
    const now = a.now ?? Date.now();
    const file = stateFile(a.env);
    const state = readState(file);
    const newer = (x: string, y: string) => semver.valid(x) !== null && semver.valid(y) !== null && semver.gt(x, y);
    const { notice, check } = decide(state, now, a.version, base, newer);
    if (notice) a.notify(notice);
    if (!notice && !check) return;
    writeState(file, {
      ...state,
      ...(notice ? { notifiedAt: now } : {}),
      ...(check ? { checkedAt: now, baseUrl: base, ...(state.baseUrl === base ? {} : { latest: undefined }) } : {}),
    });
    if (check) await startDetachedCheck();
  } catch {
    // an update check must never disturb the command it follows
  }
}

async function startDetachedCheck(): Promise<void> {
  const args = isSea() ? [UPDATE_CHECK_ARG] : [process.argv[1]!, UPDATE_CHECK_ARG];
  spawn(process.execPath, args, { detached: true, stdio: "ignore", env: process.env }).unref();
}

/** The detached child: fetch latest.txt and record it. Silent; exits 0 whatever happens. */
export async function runUpdateCheck(env: NodeJS.ProcessEnv): Promise<number> {
  try {
    const base = resolveBaseUrl(undefined, env, { insecureHttp: true });
    const latest = normalizeVersion(await fetchText(releaseUrl.latest(base), { env, deadlineMs: 15_000 }));
    if (!latest) return 0;
    const file = stateFile(env);
    const state = readState(file);
    writeState(file, { ...state, baseUrl: base, latest, checkedAt: state.checkedAt ?? Date.now() });
  } catch {
    // offline, proxy, bad base: try again tomorrow
  }
  return 0;
}
