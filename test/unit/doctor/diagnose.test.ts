// diagnose() on every fixture host: the verdict, exactly which checks fail or warn, fixes that fit
// the distribution, and the one root script (checked by a real `sh -n`, and its AppArmor profile
// written by a real shell and then read back by gatherFacts).
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { anyFailed, CHECK_IDS, diagnose, NONE_GIVES_UP, rootScript } from "../../../cli/doctor/index";
import { doctorJson } from "../../../cli/doctor/json";
import { renderReport } from "../../../cli/doctor/report";
import { gatherFacts, type GatherOptions } from "../../../cli/host/gather";
import { makeStyle } from "../../../cli/ui/output";
import { FIXTURE_HOSTS, fixtureHost, type HostJson } from "../../helpers/fixture-host";
import { tempDir } from "../../helpers/temp";

async function run(name: string, opts: GatherOptions = {}, dir?: string) {
  const facts = await gatherFacts(fixtureHost(dir ?? name), opts);
  return { facts, d: diagnose(facts) };
}

const ids = (d: ReturnType<typeof diagnose>, status: string) =>
  d.outcomes
    .filter((o) => o.status === status)
    .map((o) => o.id)
    .sort();

/** Per fixture: verdict, failing checks, warning checks. */
const EXPECTED: Record<string, { mode: string; fail: string[]; warn: string[] }> = {
  // docker: these hosts' Docker 20.10 is older than the 23.0 cri-dockerd talks to (issue 42).
  "ubuntu-20.04": { mode: "none", fail: [], warn: ["cgroup-version", "docker", "inotify", "iptables", "linger"] },
  "ubuntu-22.04": { mode: "none", fail: [], warn: ["cgroup-delegation", "inotify", "iptables", "linger"] },
  "ubuntu-24.04": { mode: "blocked", fail: ["apparmor-userns"], warn: ["inotify", "iptables", "linger"] },
  "debian-10": {
    mode: "blocked",
    fail: ["userns-clone"],
    warn: ["cgroup-version", "fuse-overlayfs", "inotify", "iptables", "linger", "overlayfs"],
  },
  "debian-11": { mode: "none", fail: [], warn: ["cgroup-delegation", "fuse-overlayfs", "inotify", "iptables", "overlayfs"] },
  "debian-12": { mode: "delegated", fail: [], warn: ["docker", "inotify"] },
  "fedora-40": { mode: "delegated", fail: [], warn: ["inotify", "iptables", "selinux"] },
  "rocky-8": {
    mode: "none",
    fail: [],
    warn: ["cgroup-version", "fuse-overlayfs", "inotify", "iptables", "linger", "overlayfs", "selinux"],
  },
  "rocky-9": { mode: "none", fail: [], warn: ["cgroup-delegation", "inotify", "iptables", "linger", "selinux"] },
  "centos-7": {
    mode: "blocked",
    fail: ["max-user-namespaces", "newgidmap", "newuidmap"],
    warn: ["cgroup-version", "fuse-overlayfs", "inotify", "iptables", "kernel", "linger", "overlayfs", "rhel7-userns", "user-manager"],
  },
  "opensuse-leap-15.6": { mode: "none", fail: [], warn: ["cgroup-version", "dbus-user-session", "inotify", "iptables", "linger"] },
  arch: { mode: "delegated", fail: [], warn: ["iptables"] },
  // No systemd user manager: not a failure, the node runs under `rootless-k8s up` (issue 38).
  "alpine-3.18": {
    mode: "none",
    fail: [],
    warn: ["cgroup-version", "inotify", "iptables", "runtime-dir", "user-manager"],
  },
  "wsl2-ubuntu-22.04": { mode: "none", fail: [], warn: ["cgroup-version", "inotify", "iptables", "user-manager"] },
  "wsl1-ubuntu-18.04": { mode: "blocked", fail: ["kernel"], warn: ["cgroup-version", "iptables", "user-manager"] },
};

describe("verdict and checks on every fixture host", () => {
  it("has an expectation for every fixture", () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(
      readdirSync(FIXTURE_HOSTS)
        .filter((n) => existsSync(join(FIXTURE_HOSTS, n, "host.json")))
        .sort(),
    );
  });
  it.each(Object.entries(EXPECTED))("%s", async (name, want) => {
    const { d } = await run(name);
    expect({ mode: d.mode, fail: ids(d, "fail"), warn: ids(d, "warn") }).toEqual(want);
    expect(d.outcomes.map((o) => o.id)).toEqual(CHECK_IDS);
    for (const o of d.outcomes) {
      expect(o.summary.length, o.id).toBeGreaterThan(0);
      expect(o.summary, o.id).not.toContain("\n");
      if (o.status === "ok" || o.status === "skip") expect(o.fix, o.id).toBeNull();
    }
    expect(anyFailed(d.outcomes)).toBe(want.fail.length > 0);
  });
});

describe("the verdict says why", () => {
  it("delegated: names the controllers and the service", async () => {
    const { d } = await run("arch");
    expect(d.reasons).toEqual(["cgroup v2 with cpuset cpu io memory pids delegated to user@1000.service"]);
    expect(d.givesUp).toEqual([]);
  });
  it("none: says why not delegated and what the node gives up, point by point", async () => {
    const hybrid = await run("ubuntu-20.04");
    expect(hybrid.d.reasons[0]).toMatch(/hybrid/);
    const v2 = await run("rocky-9");
    expect(v2.d.reasons[0]).toBe("cgroup v2, but user@1000.service has memory pids: cpu not delegated (cpu, memory and pids must all be)");
    expect(v2.d.givesUp).toEqual(NONE_GIVES_UP);
    const text = NONE_GIVES_UP.join(" ");
    for (const w of ["per-pod resource limits", "QoS", "kube-reserved", "system-reserved", "eviction", "metrics"])
      expect(text).toContain(w);
  });
  it("blocked: lists the blocking failures only", async () => {
    const { d } = await run("centos-7");
    expect(d.reasons.map((r) => r.split(":")[0])).toEqual(["newuidmap", "newgidmap", "max_user_namespaces"]);
  });
  it("running as root is a failing check that blocks, never a crash", async () => {
    const facts = await gatherFacts(fixtureHost("debian-12", { ids: { uid: 0, gid: 0 }, env: { HOME: "/root", USER: "root" } }));
    const d = diagnose(facts);
    expect(d.outcomes.find((o) => o.id === "not-root")).toMatchObject({
      status: "fail",
      summary: "running as root: a rootless node runs as an ordinary user",
    });
    expect(d.mode).toBe("blocked");
    expect(rootScript(d.outcomes, facts)).toContain("Nothing to fix for root itself");
  });
  it("root evaluating a user with --user is fine", async () => {
    const facts = await gatherFacts(fixtureHost("debian-12", { ids: { uid: 0, gid: 0 } }), { user: "user1" });
    const d = diagnose(facts);
    expect(d.outcomes.find((o) => o.id === "not-root")).toMatchObject({
      status: "ok",
      summary: "evaluating user1 (uid 1000) on its behalf",
    });
    expect(d.mode).toBe("delegated");
  });
});

describe("runtime-dir: XDG_RUNTIME_DIR holds the node's sockets, so it must be the user's alone (issue 34)", () => {
  /** debian-12 with /run/user/1000 recorded with another mode or owner. */
  const withRuntimeDir = (mode: string, uid = 1000, opts: GatherOptions = {}, ids = { uid: 1000, gid: 1000 }) => {
    const json = JSON.parse(readFileSync(join(FIXTURE_HOSTS, "debian-12", "host.json"), "utf8")) as HostJson;
    const stat = { ...json.stat, "/run/user/1000": { type: "dir" as const, mode, uid, gid: uid } };
    return gatherFacts(fixtureHost("debian-12", { stat, ids }), opts);
  };
  const outcome = async (...a: Parameters<typeof withRuntimeDir>) => {
    const facts = await withRuntimeDir(...a);
    return { facts, o: diagnose(facts).outcomes.find((o) => o.id === "runtime-dir")! };
  };

  it.each([
    ["1777", "anyone"],
    ["0777", "anyone"],
    ["0770", "its group"],
    ["0720", "its group"],
  ])("mode %s: fails, with chmod 0700 as the fix", async (mode, who) => {
    const { facts, o } = await outcome(mode);
    expect(facts.user.runtimeDir).toMatchObject({ path: "/run/user/1000", uid: 1000, mode: parseInt(mode, 8) });
    expect(o).toMatchObject({
      status: "fail",
      summary: `${who} may write in XDG_RUNTIME_DIR=/run/user/1000 (mode ${mode}): another user could plant the node's sockets or pid files there`,
      fix: { root: [], user: ["chmod 0700 /run/user/1000"] },
    });
  });

  it.each(["0700", "0755", "0500"])("mode %s: no finding of this kind", async (mode) => {
    const { o } = await outcome(mode);
    expect(o.summary).not.toMatch(/may write in/);
  });

  it("another user's: fails, naming the owner", async () => {
    const { o } = await outcome("0700", 1001);
    // Someone else's XDG_RUNTIME_DIR in the environment is what su and sudo leave behind.
    expect(o).toMatchObject({
      status: "fail",
      summary: "XDG_RUNTIME_DIR=/run/user/1000 belongs to another user (uid 1001) (this shell came through su or sudo)",
    });
  });

  it("root evaluating a user (--user) judges /run/user/UID the same way", async () => {
    const open = await outcome("1777", 1000, { user: "user1" }, { uid: 0, gid: 0 });
    expect(open.o).toMatchObject({ status: "fail", summary: expect.stringContaining("anyone may write in /run/user/1000 (mode 1777)") });
    const other = await outcome("0700", 1001, { user: "user1" }, { uid: 0, gid: 0 });
    expect(other.o).toMatchObject({ status: "fail", summary: "/run/user/1000 belongs to another user (uid 1001)" });
    const fine = await outcome("0700", 1000, { user: "user1" }, { uid: 0, gid: 0 });
    expect(fine.o).toMatchObject({ status: "ok", summary: "/run/user/1000 exists" });
  });
});

describe("fixes fit the distribution", () => {
  const fixOf = async (name: string, id: string) => (await run(name)).d.outcomes.find((o) => o.id === id)!.fix!;
  it.each([
    ["centos-7", "newuidmap", "yum install -y shadow-utils"],
    ["opensuse-leap-15.6", "dbus-user-session", "zypper --non-interactive install dbus-1"],
    ["alpine-3.18", "iptables", "apk add iptables"],
    ["arch", "iptables", "pacman -S --needed --noconfirm iptables"],
    ["fedora-40", "iptables", "dnf install -y iptables"],
    ["ubuntu-20.04", "iptables", "apt-get install -y iptables"],
  ])("%s %s: %s", async (name, id, cmd) => {
    expect((await fixOf(name, id)).root).toContain(cmd);
  });
  it("subordinate ids: a free range above the existing ones, for this user", async () => {
    const facts = await gatherFacts(fixtureHost("debian-12"), {});
    const noSub = {
      ...facts,
      user: { ...facts.user, subuid: { ...facts.user.subuid, ranges: [], total: 0, matchedBy: null, source: null } },
    };
    const o = diagnose(noSub).outcomes.find((x) => x.id === "subuid")!;
    expect(o.status).toBe("fail");
    expect(o.fix!.root).toEqual(["touch /etc/subuid", "usermod --add-subuids 196608-262143 user1"]);
  });
  it("broken iptables-nft on Debian: switch to the legacy backend", async () => {
    const { d } = await run("debian-10");
    const ipt = d.outcomes.find((o) => o.id === "iptables")!;
    expect(ipt.summary).toMatch(/1\.8\.1 \(nf_tables\)/);
    expect(ipt.fix!.root).toContain("update-alternatives --set iptables /usr/sbin/iptables-legacy");
  });
  it("WSL 2 without systemd: the node runs under `up`, and the wsl.conf switch for those who want systemd", async () => {
    const { d } = await run("wsl2-ubuntu-22.04");
    const o = d.outcomes.find((x) => x.id === "user-manager")!;
    expect(o.status).toBe("warn");
    expect(o.summary).toMatch(/systemd is not running in this WSL distribution: the node runs under `rootless-k8s up`/);
    expect(o.fix!.root).toEqual(["printf '[boot]\\nsystemd=true\\n' >> /etc/wsl.conf"]);
  });
  it("Alpine (OpenRC, no session): up, with its sockets in /tmp/rootless-k8s-UID", async () => {
    const { d } = await run("alpine-3.18");
    expect(d.outcomes.find((x) => x.id === "user-manager")!.summary).toMatch(
      /^PID 1 is not systemd: the node runs under `rootless-k8s up`/,
    );
    expect(d.outcomes.find((x) => x.id === "runtime-dir")!.summary).toMatch(/keeps its sockets in \/tmp\/rootless-k8s-1000 \(made 0700\)$/);
    expect(d.outcomes.find((x) => x.id === "dbus-user-session")!.status).toBe("skip");
  });
});

describe("the root script", () => {
  const tmp = tempDir("rk8s-doctor-");

  it.each(Object.keys(EXPECTED))("%s: valid sh, each command once, reloads last, no reboot-level fixes", async (name) => {
    const { facts, d } = await run(name);
    const script = rootScript(d.outcomes, facts);
    expect(script.startsWith("#!/bin/sh\n")).toBe(true);
    execFileSync("sh", ["-n"], { input: script });
    const body = script.split("\n").filter((l) => l && !l.startsWith("#"));
    const cmds = body.filter((l) => !/^(set -eu|echo "rootless-k8s)/.test(l));
    expect(new Set(cmds).size).toBe(cmds.length);
    const reload = cmds.findIndex((c) => c.startsWith("sysctl --system"));
    if (reload >= 0) expect(cmds.slice(reload).every((c) => /^(sysctl --system|systemctl daemon-reload)/.test(c))).toBe(true);
    expect(script).not.toMatch(/update-grub|grubby|reboot/);
  });

  it("CentOS 7: one script for every root-side fix", async () => {
    const { facts, d } = await run("centos-7");
    const script = rootScript(d.outcomes, facts);
    expect(script).toContain("yum install -y shadow-utils");
    expect(script).toContain("printf '%s\\n' 'user.max_user_namespaces = 28633' > /etc/sysctl.d/51-rootless-k8s-max-user-namespaces.conf");
    expect(script).toContain("loginctl enable-linger user1");
    expect(script.trimEnd().split("\n").slice(-3, -1)).toEqual(["sysctl --system >/dev/null", ""]);
  });

  it("Debian 12: its real inotify limits are the only root fix; once the script's sysctl files apply, nothing is left", async () => {
    const dir = join(tmp, "debian-12");
    cpSync(join(FIXTURE_HOSTS, "debian-12"), dir, { recursive: true });
    const before = await run("debian-12", {}, dir);
    expect(before.d.outcomes.filter((o) => o.fix?.root.length).map((o) => o.id)).toEqual(["inotify"]);
    // The script's own lines write the sysctl.d files (a real shell, under the copy); then what `sysctl --system` does with them.
    const sysctlD = join(dir, "root", "etc", "sysctl.d");
    mkdirSync(sysctlD, { recursive: true });
    const writes = before.d.outcomes.find((o) => o.id === "inotify")!.fix!.root.filter((c) => c.includes("> /etc/sysctl.d/"));
    expect(writes).toHaveLength(1); // both limits in one file, applied by one reload
    for (const cmd of writes) execFileSync("sh", ["-c", cmd.replace("> /etc/sysctl.d/", `> ${sysctlD}/`)]);
    for (const file of readdirSync(sysctlD)) {
      for (const line of readFileSync(join(sysctlD, file), "utf8").split("\n").filter(Boolean)) {
        const [key, value] = line.split("=").map((x) => x.trim());
        writeFileSync(join(dir, "root", "proc", "sys", ...key!.split(".")), `${value}\n`);
      }
    }
    const after = await run("debian-12", {}, dir);
    expect(after.d.outcomes.find((o) => o.id === "inotify")).toMatchObject({
      status: "ok",
      summary: "max_user_watches 524288, max_user_instances 512",
    });
    expect(rootScript(after.d.outcomes, after.facts)).toContain("# Nothing to fix as root.");
  });

  it("Ubuntu 24.04: the AppArmor profile it writes makes the same check pass (before the first failure)", async () => {
    const dir = join(tmp, "ubuntu-24.04");
    cpSync(join(FIXTURE_HOSTS, "ubuntu-24.04"), dir, { recursive: true });
    const before = await run("ubuntu-24.04", {}, dir);
    expect(before.d.mode).toBe("blocked");
    const [profileCmd, load] = before.d.outcomes.find((o) => o.id === "apparmor-userns")!.fix!.root;
    expect(load).toBe("apparmor_parser -r /etc/apparmor.d/rootless-k8s.user1.rootlesskit");
    expect(rootScript(before.d.outcomes, before.facts)).toContain(profileCmd!);
    expect(profileCmd).toContain(
      "profile rootless-k8s.user1.rootlesskit /home/user1/.local/share/rootless-k8s/versions/*/bin/rootlesskit flags=(unconfined) {",
    );
    execFileSync("sh", ["-c", profileCmd!.replace("cat > /etc/apparmor.d/", `cat > ${dir}/root/etc/apparmor.d/`)]);
    const after = await run("ubuntu-24.04", {}, dir);
    expect(after.d.outcomes.find((o) => o.id === "apparmor-userns")).toMatchObject({ status: "ok" });
    expect(after.d.mode).toBe("delegated");
  });

  it("the reboot-level cgroup v2 switch is shown with its check, not scripted", async () => {
    const { facts, d } = await run("ubuntu-20.04");
    const o = d.outcomes.find((x) => x.id === "cgroup-version")!;
    expect(o.fix!.root).toContain("update-grub");
    expect(o.rootFixInScript).toBe(false);
    expect(rootScript(d.outcomes, facts)).not.toContain("update-grub");
  });
});

describe("--json contract (schemaVersion 1)", () => {
  it.each(Object.keys(EXPECTED))("%s", async (name) => {
    const { facts, d } = await run(name);
    const j = JSON.parse(JSON.stringify(doctorJson(facts, d)));
    expect(j.schemaVersion).toBe(1);
    expect(["delegated", "none", "blocked"]).toContain(j.mode);
    expect(Object.keys(j.host).sort()).toEqual(["arch", "cgroup", "distro", "kernel", "runtimes", "systemd", "user"]);
    expect(Object.keys(j.host.distro).sort()).toEqual(["family", "id", "idLike", "prettyName", "versionId"]);
    expect([0, 1, 2]).toContain(j.host.kernel.wsl);
    expect(["v1", "hybrid", "v2"]).toContain(j.host.cgroup.mode);
    expect(Array.isArray(j.host.cgroup.delegatedControllers)).toBe(true);
    expect(Number.isInteger(j.host.user.uid)).toBe(true);
    expect(typeof j.host.systemd.userManager).toBe("boolean");
    expect(typeof j.host.systemd.linger).toBe("boolean");
    expect(Object.keys(j.host.runtimes).sort()).toEqual(["containerd", "crio", "crun", "docker", "rootlesskit", "runc", "slirp4netns"]);
    for (const [tool, t] of Object.entries(j.host.runtimes) as [string, { version: string | null } | null][]) {
      if (t?.version) expect(t.version, tool).not.toMatch(/^v|~|ubuntu|deb\d|\+ds|\+dfsg|\.el\d/);
    }
    if (j.host.runtimes.docker) expect(j.host.runtimes.docker).toHaveProperty("rootless");
    for (const c of j.checks) {
      expect(Object.keys(c).sort()).toEqual(["fix", "id", "status", "summary"]);
      if (c.fix) expect(Object.keys(c.fix).sort()).toEqual(["root", "user"]);
    }
  });
});

describe("text report", () => {
  it("is plain without colour, groups checks, keeps root and user fixes apart, ends with the verdict", async () => {
    const { facts, d } = await run("centos-7");
    const text = renderReport(facts, d, makeStyle(false));
    expect(text).not.toMatch(/\x1b\[/);
    const groups = ["Host", "User", "User namespaces", "cgroups", "systemd", "Kernel", "Ports and disk", "Container tools"];
    const at = groups.map((g) => text.indexOf(`\n${g}\n`));
    expect(at.every((i) => i > 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(text).toMatch(/FAIL {2}newuidmap\s+newuidmap not found/);
    expect(text).toContain("fix (root): yum install -y shadow-utils");
    expect(text).toMatch(/Verdict: blocked/);
    expect(text).toContain("rootless-k8s doctor --root-script | sudo sh");
  });
  it("is coloured when the style is", async () => {
    const { facts, d } = await run("ubuntu-22.04");
    const text = renderReport(facts, d, makeStyle(true));
    expect(text).toMatch(/\x1b\[33mwarn\x1b\[39m/);
    expect(text).toContain("In mode none the node gives up:");
  });
});

describe("docs/doctor-json.md", () => {
  it("lists exactly the check ids doctor has", async () => {
    const { readFileSync } = await import("node:fs");
    const doc = readFileSync(join(import.meta.dirname, "..", "..", "..", "docs", "doctor-json.md"), "utf8");
    const table = doc.slice(doc.indexOf("## Check ids"), doc.indexOf("## Example"));
    const documented = [...table.matchAll(/`([a-z0-9-]+)`/g)].map((m) => m[1]);
    expect([...documented].sort()).toEqual([...CHECK_IDS].sort());
  });
});
