// A real RootlessKit for tests, run by an ordinary test user as the node runs it (slirp4netns, the
// builtin port driver, `sleep infinity` as the child): why a host cannot run it, starting it,
// a listener inside its namespaces, reading what a published port carries, and stopping it.
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { waitFor, which as whichOn } from "./process";
import { type TestUser, USER_PATH } from "./user";

/** The system's tools, as the test user would find them (not root's own PATH). */
export const whichForUser = (t: string) => whichOn(t, USER_PATH);

/**
 * Why this host cannot run RootlessKit as a test user, or null: not root (the test user needs
 * sub-UIDs), a missing tool (`apt` names the packages), or a /dev/net/tun ordinary users cannot open.
 */
export function rootlessKitSkipReason(tools: readonly string[], packages: string): string | null {
  if (process.getuid?.() !== 0) return "needs root to create the test user with sub-UIDs";
  const missing = tools.filter((t) => !whichForUser(t));
  if (missing.length) return `missing ${missing.join(", ")} (apt-get install ${packages})`;
  const tun = statSync("/dev/net/tun", { throwIfNoEntry: false });
  if (!tun || (tun.mode & 0o006) !== 0o006)
    return "/dev/net/tun is not usable by ordinary users (Debian's udev makes it 0666; here: chmod 0666 /dev/net/tun)";
  return null;
}

/**
 * Why a test of RootlessKit with slirp4netns and a listener inside (python3, entered with nsenter)
 * cannot run here, or null; the reason is logged under `label` so a skip is never silent.
 */
export function slirpRootlessKitSkipReason(label: string): string | null {
  const reason = rootlessKitSkipReason(
    ["rootlesskit", "slirp4netns", "newuidmap", "nsenter", "python3"],
    "rootlesskit slirp4netns uidmap util-linux python3",
  );
  if (reason) console.log(`${label}: skipped: ${reason}`);
  return reason;
}

export interface RunningRootlessKit {
  process: ChildProcess;
  /** The child's pid (state-dir/child_pid): the namespaces to enter. */
  childPid: number;
  /** Everything RootlessKit wrote so far. */
  output(): string;
}

/** Starts RootlessKit (slirp4netns, builtin port driver) as `user`; resolves once its API socket is up. */
export async function startRootlessKit(user: TestUser, stateDir: string): Promise<RunningRootlessKit> {
  const args = ["--net=slirp4netns", "--port-driver=builtin", `--state-dir=${stateDir}`, "--disable-host-loopback", "sleep", "infinity"];
  const child = user.spawn(whichForUser("rootlesskit"), args, { HOME: user.newHome(), PATH: USER_PATH }, { detached: true });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const ready = () => existsSync(join(stateDir, "child_pid")) && existsSync(join(stateDir, "api.sock"));
  await waitFor(ready, 30_000, () => `RootlessKit's child_pid and api.sock (output: ${out})`);
  return { process: child, childPid: Number(readFileSync(join(stateDir, "child_pid"), "utf8")), output: () => out };
}

/**
 * A TCP listener inside the namespaces of `childPid` on `bind:port`, run by `user`: it answers each
 * connection with "hello from inside to <the address it was reached at>" and closes it.
 */
export async function listenInside(user: TestUser, childPid: number, bind: string, port: number): Promise<ChildProcess> {
  const server = [
    "import socket,sys",
    "s=socket.socket()",
    "s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)",
    "s.bind((sys.argv[1],int(sys.argv[2])))",
    "s.listen(8)",
    "print('listening',flush=True)",
    "while True:",
    "  c,a=s.accept()",
    "  c.sendall(('hello from inside to '+c.getsockname()[0]+'\\n').encode())",
    "  c.close()",
  ].join("\n");
  const nsenter = ["-U", "-n", "--preserve-credentials", "-t", String(childPid), whichForUser("python3"), "-c", server, bind, String(port)];
  const inside = user.spawn(whichForUser("nsenter"), nsenter, { PATH: USER_PATH }, { detached: true });
  let said = "";
  inside.stdout!.on("data", (d) => (said += d));
  inside.stderr!.on("data", (d) => (said += d));
  await waitFor(
    () => said.includes("listening"),
    10_000,
    () => `the listener inside (output: ${said})`,
  );
  return inside;
}

/** Everything a TCP client reads from 127.0.0.1:port until the other side closes (or 5 s pass). */
export function readAll(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const s = connect(port, "127.0.0.1");
    s.setTimeout(5000, () => s.destroy(new Error(`no end from 127.0.0.1:${port} within 5 s (read: ${text})`)));
    s.on("data", (d) => (text += d));
    s.on("close", () => resolve(text));
    s.on("error", reject);
  });
}

/** Sends SIGTERM, then after `graceMs` SIGKILL, to a detached child's whole process group. */
export async function stopGroup(child: ChildProcess | null | undefined, graceMs = 1000): Promise<void> {
  if (!child?.pid) return;
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {}
  await new Promise((r) => setTimeout(r, graceMs));
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {}
}
