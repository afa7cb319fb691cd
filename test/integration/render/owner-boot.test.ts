// The namespace owner's real boot, without systemd: the rendered RootlessKit command line and
// child script run Debian's real RootlessKit 1.1 and containerd 1.6 as an ordinary user, exactly as
// the owner unit's ExecStart would. Checks what the unit relies on:
//  - the runtime's sd_notify READY=1 reaches NOTIFY_SOCKET through RootlessKit (Type=notify +
//    NotifyAccess=all), and RootlessKit writes child_pid;
//  - the child script's bind mounts are in place inside the namespaces, entered with the rendered
//    rootless-k8s-enter (nsenter), and containerd answers on the rendered socket.
// Skips, saying why, where the host lacks the tools (CI installs them: see .ci/run).
import { spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatherFacts } from "../../../cli/host/gather";
import { localHost } from "../../../cli/host/host";
import { buildPlan, validatePlan } from "../../../cli/plan";
import type { Plan } from "../../../cli/plan/plan";
import { folders, generatePki, layout, renderNode } from "../../../cli/render/index";
import { rootlesskitArgs } from "../../../cli/render/rootlesskit";
import { pinnedVersions, relocated } from "../../golden/combos";
import { freePort } from "../../helpers/net";
import { waitFor } from "../../helpers/process";
import { tempDir } from "../../helpers/temp";
import { rootlessKitSkipReason, stopGroup, whichForUser as which } from "../../helpers/rootlesskit";
import { testUser, USER_PATH } from "../../helpers/user";

const NAME = "rk8s-boot";
const tools = ["rootlesskit", "slirp4netns", "containerd", "containerd-shim-runc-v2", "runc", "newuidmap", "python3", "nsenter", "ctr"];

function skipReason(): string | null {
  const host = rootlessKitSkipReason(tools, "rootlesskit slirp4netns containerd uidmap");
  if (host) return host;
  const rk = spawnSync("rootlesskit", ["--version"], { encoding: "utf8" }).stdout;
  if (!/version 1\./.test(rk)) return `this test drives RootlessKit 1.x (found: ${rk.trim()})`;
  return null;
}
const reason = skipReason();
if (reason) console.log(`owner-boot: skipped: ${reason}`);

describe.skipIf(reason !== null)("the owner's ExecStart boots real RootlessKit 1.1 + containerd 1.6", () => {
  const work = tempDir("rk8s-boot-");
  chmodSync(work, 0o755);
  const home = join(work, "home");
  const runtimeDir = join(work, "run");
  let plan: Plan;
  let owner: ChildProcess | null = null;
  let notify: ChildProcess | null = null;
  let notified = "";
  let ownerLog = "";
  const user = testUser(NAME, { subIds: "auto" });

  beforeAll(async () => {
    mkdirSync(home, { mode: 0o755 });
    mkdirSync(runtimeDir, { mode: 0o700 });
    const facts = relocated(await gatherFacts(localHost(), { user: NAME }), home, runtimeDir);
    facts.user.uid = user.uid; // evaluated as NAME, run as NAME
    const debian = { ...pinnedVersions(), id: "debian-test" };
    // Debian's containerd 1.6 runs only Kubernetes up to 1.35 (KEP-4033; validatePlan refuses
    // 1.36 with it). This test boots the runtime alone, so the plan names 1.35.
    debian.components = { ...debian.components, rootlesskit: "1.1.0", kubernetes: "1.35.0" };
    plan = buildPlan(
      facts,
      {
        runtimeBin: which("containerd"),
        runtimeBinVersion: "1.6.20",
        network: "slirp4netns",
        apiPort: await freePort("0.0.0.0"),
        // The owner unit as systemd runs it (READY=1 on NOTIFY_SOCKET); the test user has no manager.
        supervisor: "systemd",
      },
      debian,
    );
    validatePlan(plan, facts);
    for (const f of folders(plan)) mkdirSync(f.path, { recursive: true, mode: f.mode });
    for (const f of renderNode(plan, await generatePki(plan))) {
      mkdirSync(join(f.path, ".."), { recursive: true });
      writeFileSync(f.path, f.content, { mode: f.mode });
    }
    mkdirSync(plan.paths.versionBinDir, { recursive: true });
    for (const t of ["rootlesskit", "runc"]) symlinkSync(which(t), join(plan.paths.versionBinDir, t));
    symlinkSync(plan.versions.id, plan.paths.currentLink);
    writeFileSync(join(layout(plan).data.kubelet, "marker"), "ours\n");
    user.own(work);

    // A notify socket as systemd's: a datagram socket whose messages we print.
    const sock = join(runtimeDir, "notify");
    const receiver = `import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\ns.bind(sys.argv[1])\nprint("bound",flush=True)\nwhile True:\n  print(s.recv(4096).decode(),flush=True)\n`;
    notify = user.spawn(which("python3"), ["-c", receiver, sock], {});
    notify.stdout!.on("data", (d) => (notified += d));
    await waitFor(() => notified.includes("bound"), 10_000, "the notify socket");

    const env = { HOME: home, XDG_RUNTIME_DIR: runtimeDir, NOTIFY_SOCKET: sock, PATH: `${plan.paths.binDir}:${USER_PATH}` };
    const [rootlesskit, ...args] = rootlesskitArgs(plan);
    owner = user.spawn(rootlesskit!, args, env, { detached: true });
    owner.stdout!.on("data", (d) => (ownerLog += d));
    owner.stderr!.on("data", (d) => (ownerLog += d));
  }, 60_000);

  afterAll(async () => {
    await stopGroup(owner, 1500);
    notify?.kill("SIGKILL");
  });

  it("the runtime's READY=1 reaches NOTIFY_SOCKET, and RootlessKit writes child_pid", async () => {
    await waitFor(
      () => /READY=1/.test(notified),
      45_000,
      () => `READY=1 (owner output: ${ownerLog})`,
    );
    const pidFile = join(plan.paths.rootlesskitStateDir, "child_pid");
    await waitFor(() => existsSync(pidFile), 10_000, "child_pid");
    expect(Number(readFileSync(pidFile, "utf8"))).toBeGreaterThan(1);
  }, 60_000);

  it("the enter script runs commands inside: root in the user namespace, the node's own /var/lib/kubelet", () => {
    const enter = layout(plan).scripts.enter;
    const r = user.run(
      enter,
      [
        "sh",
        "-c",
        "id -u; cat /var/lib/kubelet/marker; cat /proc/self/uid_map | head -1; test -L /run/containerd && echo shared || echo private",
      ],
      {
        HOME: home,
        XDG_RUNTIME_DIR: runtimeDir,
      },
    );
    expect(r.stderr).toBe("");
    const [uid, marker, map, run] = r.stdout
      .trim()
      .split("\n")
      .map((l) => l.trim().replace(/\s+/g, " "));
    expect(uid).toBe("0");
    expect(marker).toBe("ours");
    expect(map).toBe(`0 ${user.uid} 1`);
    expect(run).toBe("private");
  });

  it("containerd answers on the rendered socket, with the rendered root", () => {
    const r = user.run("ctr", ["--address", plan.runtime.criSocket, "version"], { HOME: home, XDG_RUNTIME_DIR: runtimeDir });
    expect(r.stdout).toMatch(/Server:\s*\n\s*Version:\s*1\.6\./);
    expect(existsSync(join(layout(plan).data.containerd, "io.containerd.metadata.v1.bolt"))).toBe(true);
  });
});
