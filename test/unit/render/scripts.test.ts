// The helper scripts the units run are plain POSIX sh: `sh -n` parses them and shellcheck (when
// installed; CI installs it) finds nothing, for every combination's scripts. The child script's
// Service-range guard runs with the real iptables in a new user and network namespace.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { generatePki, renderNode } from "../../../cli/render/index";
import { shQuote } from "../../../cli/render/scripts";
import { COMBOS, comboFacts, planCombo } from "../../golden/combos";
import { tempDir } from "../../helpers/temp";

async function childScript(name: string): Promise<{ text: string; services: string }> {
  const combo = COMBOS.find((c) => c.name === name);
  if (!combo) throw new Error(`no combination ${name}`);
  const { plan } = planCombo(combo, await comboFacts(combo));
  if (!plan) throw new Error(`${name} has no plan`);
  const child = renderNode(plan, await generatePki(plan)).find((f) => f.path.endsWith("/rootless-k8s-child"));
  if (!child) throw new Error(`${name} has no child script`);
  return { text: child.content.toString(), services: plan.cidrs.services };
}

/** The guard's lines of a child script: from its comment to its loop's end. */
function guardOf(script: string): string {
  const m = /# Traffic to the Service range[\s\S]*?\ndone\n/.exec(script);
  return m ? m[0] : "";
}

const hasShellcheck = spawnSync("shellcheck", ["--version"]).status === 0;

describe("rendered helper scripts", () => {
  it("parse with sh -n and pass shellcheck -s sh, in every combination", async () => {
    let checked = 0;
    for (const combo of COMBOS) {
      const { plan } = planCombo(combo, await comboFacts(combo));
      if (!plan) continue;
      const scripts = renderNode(plan, await generatePki(plan)).filter((f) => f.kind === "script");
      // the enter script, the child (or docker's publish and kubelet-ns) script, in mode none with
      // containerd 2 crun's wrapper, and the network driver's watch where RootlessKit runs a driver process
      expect(scripts.length).toBe(
        2 +
          (plan.runtime.docker ? 1 : 0) +
          (plan.runtime.ociRuntime?.cgroupManager ? 1 : 0) +
          (plan.network.binary && !plan.runtime.docker ? 1 : 0),
      );
      for (const s of scripts) {
        const text = s.content.toString();
        expect(text.startsWith("#!/bin/sh\n")).toBe(true);
        expect(spawnSync("sh", ["-n"], { input: text, encoding: "utf8" }).status, `${combo.name}: ${s.path}`).toBe(0);
        if (hasShellcheck) {
          const r = spawnSync("shellcheck", ["-s", "sh", "-"], { input: text, encoding: "utf8" });
          expect(r.stdout, `${combo.name}: ${s.path}`).toBe("");
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(22);
  }, 60_000);

  it("refuses untranslated traffic to the Service range inside a real network namespace (kube-proxy's iptables mode)", async () => {
    const { text, services } = await childScript("none-containerd-slirp4netns");
    const guard = guardOf(text);
    expect(guard).toContain(`-d ${services} -j REJECT`);
    const net = services.split("/")[0] ?? "";
    const inRange = net.replace(/\.\d+$/, ".7"); // an address of the range no Service holds
    // A namespace like RootlessKit's: a tap device as the default route (no one at its far end).
    const setup = [
      "ip link set lo up",
      "ip tuntap add t0 mode tap",
      "ip addr add 10.0.2.100/24 dev t0",
      "ip link set t0 up",
      "ip route add default via 10.0.2.2 dev t0",
    ].join(" && ");
    const connect = (ip: string) => `timeout 2 bash -c 'exec 3<>/dev/tcp/${ip}/81' 2>&1; echo "rc=$?"`;
    const script = `${setup} || exit 99\n${guard}iptables -w -S OUTPUT; iptables -w -S FORWARD\n${connect(inRange)}\n${connect("203.0.113.7")}`;
    const r = spawnSync("unshare", ["--user", "--map-root-user", "--net", "sh", "-c", script], { encoding: "utf8" });
    expect(r.status, `unshare/iptables/ip tuntap must work here (make test installs iptables): ${r.stderr}`).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain(`-A OUTPUT -d ${services} -j REJECT`);
    expect(r.stdout).toContain(`-A FORWARD -d ${services} -j REJECT`);
    const [refused, outside] = r.stdout.split(/rc=\d+\n/).slice(-3);
    expect(refused).toContain("Connection refused");
    // Outside the range the guard does nothing: the connection waits for the absent far end.
    expect(outside).not.toContain("Connection refused");
    expect(r.stdout).toMatch(/rc=124\n$/);
  }, 20_000);

  it("adds no guard where kube-proxy uses nftables (it refuses that traffic itself)", async () => {
    const { text } = await childScript("delegated-containerd-builtin");
    expect(guardOf(text)).toBe("");
    expect(text).not.toContain("iptables");
  });

  it("docker: gives the kubelet its own /var/lib below dockerd's mount namespace, and its volume mounts reach dockerd's", async () => {
    const combo = COMBOS.find((c) => c.name === "none-docker");
    if (!combo) throw new Error("no combination none-docker");
    const { plan } = planCombo(combo, await comboFacts(combo));
    const file = renderNode(plan!, await generatePki(plan!)).find((f) => f.path.endsWith("/rootless-k8s-kubelet-ns"));
    if (!file) throw new Error("no kubelet-ns script");
    const dir = tempDir();
    const state = join(dir, "kubelet");
    const log = join(dir, "log");
    mkdirSync(state);
    mkdirSync(log);
    // The node's folders, moved into the test's temporary folder.
    const script = file.content
      .toString()
      .replace(/^state=.*$/m, `state=${shQuote(state)}`)
      .replace(/^host=.*$/m, `host=${shQuote(join(dir, "host-var-lib"))}`)
      .replace(/^mount --bind \S+ \/var\/log$/m, `mount --bind ${shQuote(log)} /var/log`);
    writeFileSync(join(dir, "kubelet-ns"), script, { mode: 0o755 });
    // What the "kubelet" does in its namespace: writes the device manager's folder through
    // /var/lib/kubelet and its log links' folder in /var/log, mounts a Secret-like tmpfs under its root dir, and looks at /var/lib.
    const kubelet = [
      `[ "$(stat -c %d:%i /var/lib/kubelet)" = "$(stat -c %d:%i ${state})" ] && echo own-kubelet-folder`,
      "mkdir -p /var/lib/kubelet/device-plugins && : > /var/lib/kubelet/device-plugins/kubelet.sock",
      "mkdir /var/log/containers",
      "[ -L /var/lib/dpkg ] && [ -d /var/lib/dpkg/info ] && echo host-entries-linked",
      `mkdir -p ${state}/pods/v && mount -t tmpfs secret ${state}/pods/v && echo token > ${state}/pods/v/token`,
      `: > ${state}/mounted`,
      "exec sleep 5",
    ].join("\n");
    writeFileSync(join(dir, "fake-kubelet"), kubelet);
    // The outer namespaces stand in for dockerd's: a user and mount namespace whose / is not shared.
    const outer = [
      `sh ${join(dir, "kubelet-ns")} sh ${join(dir, "fake-kubelet")} &`,
      `i=0; until [ -e ${state}/mounted ] || [ $i -gt 50 ]; do sleep 0.1; i=$((i+1)); done`,
      `echo "dockerd sees: $(cat ${state}/pods/v/token)"`,
      "findmnt -n --mountpoint /var/lib >/dev/null || echo dockerd-var-lib-untouched",
      "kill $!; wait",
    ].join("\n");
    const r = spawnSync("unshare", ["--user", "--map-root-user", "--mount", "sh", "-c", outer], { encoding: "utf8", timeout: 20_000 });
    expect(r.stderr, r.stdout).toBe("");
    expect(r.stdout.split("\n").filter(Boolean)).toEqual([
      "own-kubelet-folder",
      "host-entries-linked",
      "dockerd sees: token",
      "dockerd-var-lib-untouched",
    ]);
    // The device manager's socket landed in the node's own folder, on disk.
    expect(existsSync(join(state, "device-plugins", "kubelet.sock"))).toBe(true);
    // and the kubelet's fixed /var/log/containers in the node's log folder.
    expect(existsSync(join(log, "containers"))).toBe(true);
  }, 30_000);

  it("quotes words for sh so that any path survives", () => {
    expect(shQuote("/home/alice/x")).toBe("/home/alice/x");
    expect(shQuote("/home/a b/it's")).toBe(`'/home/a b/it'\\''s'`);
    const r = spawnSync("sh", ["-c", `printf %s ${shQuote("a b'c$HOME")}`], { encoding: "utf8" });
    expect(r.stdout).toBe("a b'c$HOME");
  });

  describe("the network driver's watch (rootless-k8s-netwatch)", () => {
    // A stand-in RootlessKit as the real one behaves: it starts the driver and never reaps it, so a
    // dead driver stays a zombie. The driver is a copy of sleep named slirp4netns (its comm); the
    // unit's state comes from a systemctl on PATH that prints what the case sets.
    async function watched(unitState: string, withDriver = true) {
      const dir = tempDir();
      copyFileSync("/bin/sleep", join(dir, "slirp4netns"));
      writeFileSync(join(dir, "systemctl"), `#!/bin/sh\necho ${unitState}\n`, { mode: 0o755 });
      const combo = COMBOS.find((c) => c.name === "none-containerd-slirp4netns");
      if (!combo) throw new Error("no combination none-containerd-slirp4netns");
      const { plan } = planCombo(combo, await comboFacts(combo));
      const script = renderNode(plan!, await generatePki(plan!)).find((f) => f.path.endsWith("/rootless-k8s-netwatch"));
      if (!script) throw new Error("no netwatch script");
      writeFileSync(join(dir, "netwatch"), script.content, { mode: 0o755 });
      const driver = withDriver ? `subprocess.Popen([${JSON.stringify(join(dir, "slirp4netns"))}, "60"])` : "None";
      const owner: ChildProcess = spawn(
        "python3",
        ["-c", `import subprocess, time\nd = ${driver}\nprint(d.pid if d else 0, flush=True)\ntime.sleep(60)`],
        {
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      const driverPid = Number(await new Promise<string>((resolve) => owner.stdout?.once("data", (b: Buffer) => resolve(b.toString()))));
      const exited = new Promise<NodeJS.Signals | null>((resolve) => owner.once("exit", (_code, signal) => resolve(signal)));
      const env = { ...process.env, PATH: `${dir}:${process.env.PATH}` };
      // Its output to a file, as the unit's is: the loop it leaves behind keeps the descriptors.
      const out = openSync(join(dir, "out"), "w");
      const run = spawnSync("sh", [join(dir, "netwatch"), String(owner.pid)], { env, stdio: ["ignore", out, out], timeout: 5000 });
      closeSync(out);
      return { owner, driverPid, exited, status: run.status, output: () => readFileSync(join(dir, "out"), "utf8") };
    }

    it("kills RootlessKit once its driver is gone while the unit is active", async () => {
      const w = await watched("active");
      expect(w.status).toBe(0);
      process.kill(w.driverPid, "SIGKILL");
      const signal = await Promise.race([w.exited, new Promise((r) => setTimeout(() => r("still running"), 5000))]);
      w.owner.kill("SIGKILL");
      expect(signal).toBe("SIGKILL");
      expect(w.output()).toBe(
        `rootless-k8s-netwatch: slirp4netns (pid ${w.driverPid}) ended while the node ran: ended RootlessKit (pid ${w.owner.pid}); systemd starts the node's namespaces again\n`,
      );
    }, 15_000);

    it("leaves RootlessKit alone when the driver ends in a stop (the unit is deactivating)", async () => {
      const w = await watched("deactivating");
      process.kill(w.driverPid, "SIGKILL");
      const signal = await Promise.race([w.exited, new Promise((r) => setTimeout(() => r("still running"), 3000))]);
      w.owner.kill("SIGKILL");
      expect(signal).toBe("still running");
      expect(w.output()).toBe("");
    }, 15_000);

    it("says so, and exits 0, where RootlessKit runs no driver process", async () => {
      const w = await watched("active", false);
      w.owner.kill("SIGKILL");
      expect(w.status).toBe(0);
      expect(w.output()).toMatch(
        /^rootless-k8s-netwatch: no slirp4netns process under RootlessKit \(\d+\): its network driver is not watched\n$/,
      );
    });
  });
});
