// systemd: its version, whether it is PID 1, the user's manager and D-Bus session, and linger.
import type { SystemdFacts } from "../facts";
import { parseSystemdVersion } from "../parse/versions";
import { findTool, probeRun, type ProbeContext } from "./context";

/** Where distributions install libsystemd-shared-NNN.so: Debian 12+ in the multiarch folder, Debian 11 in /lib. */
const SYSTEMD_LIB_DIRS = [
  "/usr/lib/x86_64-linux-gnu/systemd",
  "/usr/lib/aarch64-linux-gnu/systemd",
  "/usr/lib/systemd",
  "/usr/lib64/systemd",
  "/lib/systemd",
];

/**
 * The version from the shared library's file name ("libsystemd-shared-252.so", Arch
 * "libsystemd-shared-256.7-1.so"), without running anything; systemctl --version otherwise.
 */
async function versionFromFiles(ctx: ProbeContext): Promise<number | null> {
  for (const dir of SYSTEMD_LIB_DIRS) {
    const names = await ctx.host.readDir(dir);
    const m = names?.map((n) => /^libsystemd-shared-(\d+)/.exec(n)).find(Boolean);
    if (m) return Number(m[1]);
  }
  return null;
}

async function systemdVersion(ctx: ProbeContext): Promise<number | null> {
  const fromFiles = await versionFromFiles(ctx);
  if (fromFiles !== null) return fromFiles;
  const systemctl = await findTool(ctx.host, "systemctl");
  if (!systemctl) return null;
  const r = await probeRun(ctx, systemctl, ["--version"], 1000);
  return r.code === 0 ? parseSystemdVersion(r.stdout) : null;
}

/** The user's manager answers: `systemctl --user show-environment` for ourselves, its private socket for --user. */
async function userManager(ctx: ProbeContext, runtimeDir: string): Promise<boolean> {
  const { host, user } = ctx;
  if (user.other || host.ids.uid === 0 || !host.canRun) {
    return (await host.stat(`/run/user/${user.uid}/systemd/private`))?.type === "socket";
  }
  const systemctl = await findTool(host, "systemctl");
  if (!systemctl) return false;
  const env: Record<string, string> = host.env.XDG_RUNTIME_DIR ? {} : { XDG_RUNTIME_DIR: runtimeDir };
  const r = await host.run(systemctl, ["--user", "show-environment"], { timeoutMs: 1500, env });
  if (r.timedOut) ctx.note("`systemctl --user show-environment` gave no answer within 1500 ms");
  return r.code === 0;
}

/** Linger is the file logind reads (loginctl enable-linger writes it): no need to ask loginctl. */
async function linger(ctx: ProbeContext): Promise<boolean | null> {
  const { host, user } = ctx;
  if (await host.stat(`/var/lib/systemd/linger/${user.name}`)) return true;
  return (await host.stat("/var/lib/systemd")) ? false : null;
}

export async function systemdFacts(ctx: ProbeContext, runtimeDir: string): Promise<SystemdFacts> {
  const { host } = ctx;
  const [version, comm, manager, lingering, bus, journalSocket] = await Promise.all([
    systemdVersion(ctx),
    host.readText("/proc/1/comm"),
    userManager(ctx, runtimeDir),
    linger(ctx),
    host.stat(`${runtimeDir}/bus`),
    // Unit output reaches journald through this socket; without it systemd sends it to /dev/null.
    // (A systemd PID 1 always runs journald; only hosts without one need the socket looked at.)
    host.stat("/run/systemd/journal/stdout"),
  ]);
  return {
    version,
    userManager: manager,
    dbusUserSession: bus?.type === "socket",
    linger: lingering,
    pid1: comm?.trim() === "systemd",
    journal: comm?.trim() === "systemd" ? true : host.canRun ? journalSocket?.type === "socket" : null,
  };
}
