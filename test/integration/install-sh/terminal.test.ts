// The interactive install through the piped script, in a real terminal: tmux runs
// `curl … | sh` as a non-root user; install.sh hands over to `rootless-k8s install` with the
// terminal (/dev/tty) as its input, the questions appear on the screen, keys typed into the
// terminal answer them, and answering "no" to "Install this node?" changes nothing.
import { execFileSync, spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveDir, type StaticServer } from "../../helpers/http-server";
import { freePort } from "../../helpers/net";
import { hasCommand } from "../../helpers/process";
import { tempDir } from "../../helpers/temp";
import { isRoot, runAs, type TestUser } from "../../helpers/user";
import { addRelease, BINARY_NAME, installUser, listFiles, testBinary } from "../../unit/binary/release-fixture";

const hasTmux = hasCommand("tmux");

describe.skipIf(!isRoot || !hasTmux)("interactive install through `curl | sh` in a terminal (tmux; needs root for the test user)", () => {
  let base: string;
  let server: StaticServer;
  let user: TestUser;
  let binDir: string;

  beforeAll(async () => {
    binDir = testBinary("1.0.0");
    base = tempDir("rk8s-release-");
    addRelease(base, binDir);
    server = await serveDir(base);
    user = installUser();
  });
  afterAll(async () => {
    await server?.close();
  });

  it("shows the questions, takes the answers typed in the terminal, and a no changes nothing", async () => {
    const home = user.newHome();
    const env = {
      HOME: home,
      PATH: "/usr/bin:/bin",
      SHELL: "/bin/bash",
      TERM: "xterm",
      LANG: "C.UTF-8",
      ROOTLESS_K8S_DOWNLOAD_URL: server.url,
      ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
    };

    // Any check this host fails for this user is named with --ignore-check, so the install goes on
    // to its questions, as the doctor's fix lines say (no systemd user manager here is no failure:
    // the node would run under `rootless-k8s up`).
    const doctor = await runAs(user, join(binDir, BINARY_NAME), ["doctor", "--json"], env);
    const failing = (JSON.parse(doctor.stdout) as { checks: { id: string; status: string }[] }).checks
      .filter((c) => c.status === "fail")
      .map((c) => c.id);
    const installArgs = [...failing.flatMap((id) => ["--ignore-check", id]), "--api-port", String(await freePort())].join(" ");

    const sock = join(home, "tmux.sock");
    const tmux = (...args: string[]) =>
      execFileSync("tmux", ["-S", sock, ...args], { encoding: "utf8", uid: user.uid, gid: user.gid, env });
    const screen = () => tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "install");
    const waitFor = async (re: RegExp, ms = 60_000) => {
      for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) if (re.test(screen())) return;
      throw new Error(`the terminal never showed ${re}:\n${screen()}`);
    };
    const pipeline = `curl -fsSL "$ROOTLESS_K8S_DOWNLOAD_URL/install.sh" | sh -s -- --insecure-http -- ${installArgs}; echo "EXIT=$?"; sleep 600`;
    tmux("new-session", "-d", "-s", "install", "-x", "200", "-y", "50", "sh", "-c", pipeline);
    try {
      await waitFor(/Running: rootless-k8s install (--ignore-check \S+ )*--api-port \d+/);
      await waitFor(/Add a "rootless-k8s" context to .*\.kube\/config \(nothing of yours is replaced\)\?/);
      tmux("send-keys", "-t", "install", "n", "Enter");
      await waitFor(/Add a "rootless-k8s" context to .*\? No/);
      await waitFor(/Install this node\?/);
      tmux("send-keys", "-t", "install", "n", "Enter");
      await waitFor(/EXIT=\d+/);
      const text = screen();
      expect(text).toMatch(/Install this node\? No/);
      expect(text).toContain("Nothing was changed.");
      expect(text).toContain("EXIT=0");
      expect(text).not.toMatch(/not asked/); // every question was really asked, none answered for us
      expect(listFiles(home).filter((f) => f !== "tmux.sock")).toEqual([".local/bin/rootless-k8s"]);
    } finally {
      spawnSync("tmux", ["-S", sock, "kill-server"], { uid: user.uid, gid: user.gid, env });
    }
  });
});
