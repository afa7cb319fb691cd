// gatherFacts on every fixture host (test/fixtures/hosts): what each real system looks like once read
// through the Host interface, and that every fixture names the source of every file it holds.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { gatherFacts, UnknownUserError } from "../../../cli/host/gather";
import { FIXTURE_HOSTS, fixtureHost } from "../../helpers/fixture-host";

const NAMES = readdirSync(FIXTURE_HOSTS).filter((n) => existsSync(join(FIXTURE_HOSTS, n, "host.json")));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]));
}

describe("fixture hosts", () => {
  it("cover at least 12 distributions and every cgroup shape", async () => {
    expect(NAMES.length).toBeGreaterThanOrEqual(12);
    const shapes = new Set<string>();
    for (const n of NAMES) {
      const f = await gatherFacts(fixtureHost(n));
      shapes.add(f.cgroup.mode === "v2" ? (f.cgroup.delegated ? "v2-delegated" : "v2-not-delegated") : f.cgroup.mode);
    }
    expect([...shapes].sort()).toEqual(["hybrid", "v1", "v2-delegated", "v2-not-delegated"]);
  });

  it.each(NAMES)("%s: SOURCE.md names the source of every file under root/ and every recorded command", (name) => {
    const dir = join(FIXTURE_HOSTS, name);
    const source = readFileSync(join(dir, "SOURCE.md"), "utf8");
    const host = JSON.parse(readFileSync(join(dir, "host.json"), "utf8")) as { commands?: Record<string, unknown> };
    for (const f of files(join(dir, "root"))) {
      const rel = relative(join(dir, "root"), f);
      const named = source.includes(rel) || source.includes(rel.split("/").slice(0, 2).join("/")) || /^usr\/s?bin\/|^usr\/lib/.test(rel);
      expect(named, `${name}: ${rel} has no source line`).toBe(true);
    }
    for (const c of Object.keys(host.commands ?? {})) expect(source, `${name}: \`${c}\``).toContain(`\`${c}\``);
  });
});

describe("what gatherFacts reads on real systems", () => {
  it("Debian 12: every container tool's version from the Debian packages' own output", async () => {
    const f = await gatherFacts(fixtureHost("debian-12"));
    const r = f.runtimes;
    expect(f.distro).toMatchObject({
      id: "debian",
      versionId: "12",
      family: "debian",
      versionCodename: "bookworm",
      source: "/etc/os-release",
    });
    expect([
      r.containerd?.version,
      r.runc?.version,
      r.crun?.version,
      r.rootlesskit?.version,
      r.slirp4netns?.version,
      r.fuseOverlayfs?.version,
    ]).toEqual(["1.6.20", "1.1.5", "1.8.1", "1.1.0", "1.2.0", "1.10"]);
    expect(r.containerd?.raw).toBe("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3");
    expect(r.pasta).toMatchObject({ path: "/usr/bin/pasta", version: null });
    expect(r.iptables).toMatchObject({ version: "1.8.9", backend: "nf_tables", path: "/usr/sbin/iptables" });
    expect(r.docker).toMatchObject({
      version: "20.10.24",
      clientVersion: "20.10.24",
      serverVersion: null,
      serverReachable: false,
      rootless: null,
    });
    expect(r.crio).toBeNull();
    expect(f.systemd).toMatchObject({ version: 252, pid1: true, userManager: true, dbusUserSession: true, linger: true });
    expect(f.cgroup).toMatchObject({ mode: "v2", userControllers: ["cpu", "memory", "pids"], delegated: true, v2Mount: "/sys/fs/cgroup" });
    expect(f.user.newuidmap).toMatchObject({ path: "/usr/bin/newuidmap", setuidRoot: true, privileged: true });
  });

  it("Ubuntu 20.04: hybrid cgroups, a rootful Docker 20.10 with cgroupfs, systemd from systemctl --version", async () => {
    const h = fixtureHost("ubuntu-20.04");
    const f = await gatherFacts(h);
    expect(f.cgroup).toMatchObject({
      mode: "hybrid",
      v2Mount: "/sys/fs/cgroup/unified",
      userControllers: null,
      delegated: false,
      selfCgroup: "/user.slice/user-1000.slice/session-1.scope",
    });
    expect(f.runtimes.docker).toMatchObject({
      version: "20.10.12",
      serverVersion: "20.10.12",
      clientVersion: null,
      rootless: false,
      cgroupDriver: "cgroupfs",
      cgroupVersion: "1",
      serverReachable: true,
    });
    expect(f.runtimes.containerd?.version).toBe("1.4.12");
    expect(f.systemd.version).toBe(245);
    expect(h.calls).toContain("systemctl --version");
    expect(f.user).toMatchObject({ name: "testuser", uid: 1001 });
    expect(f.user.subuid).toMatchObject({ ranges: [{ start: 231072, count: 65536 }], matchedBy: "name", total: 65536, source: "file" });
  });

  it("Ubuntu 22.04: rootless Docker (context and security option), cgroup v2 delegating only memory and pids", async () => {
    const f = await gatherFacts(fixtureHost("ubuntu-22.04"));
    expect(f.runtimes.docker).toMatchObject({
      rootless: true,
      clientVersion: "28.3.3",
      serverVersion: null,
      socket: "unix:///run/user/1001/docker.sock",
    });
    expect(f.cgroup).toMatchObject({ mode: "v2", userControllers: ["memory", "pids"], delegated: false });
    expect(f.systemd.version).toBe(249);
  });

  it("Ubuntu 24.04: the AppArmor restriction, and only /usr/bin/rootlesskit covered by a userns profile", async () => {
    const h = fixtureHost("ubuntu-24.04");
    const f = await gatherFacts(h);
    expect(f.userns).toMatchObject({
      apparmorRestrict: 1,
      apparmorEnabled: true,
      apparmorUsernsProfiles: [{ attach: "/usr/bin/rootlesskit", file: "/etc/apparmor.d/rootlesskit" }],
      rootlesskitPath: "/home/user1/.local/share/rootless-k8s/versions/current/bin/rootlesskit",
      rootlesskitProfileAttach: "/home/user1/.local/share/rootless-k8s/versions/*/bin/rootlesskit",
      rootlesskitCovered: false,
    });
    const system = await gatherFacts(fixtureHost("ubuntu-24.04"), { rootlesskitPath: "/usr/bin/rootlesskit" });
    expect(system.userns.rootlesskitCovered).toBe(true);
  });

  it("Fedora 40: newuidmap and newgidmap privileged by file capabilities (read with getcap), SELinux enforcing", async () => {
    const h = fixtureHost("fedora-40");
    const f = await gatherFacts(h);
    expect(f.user.newuidmap).toMatchObject({ setuidRoot: false, capabilities: "cap_setuid=ep", capabilitiesKnown: true, privileged: true });
    expect(f.user.newgidmap).toMatchObject({ setuidRoot: false, capabilities: "cap_setgid=ep", privileged: true });
    expect(h.calls).toContain("getcap /usr/bin/newuidmap /usr/bin/newgidmap");
    expect(f.features.selinux).toBe("enforcing");
    expect(f.systemd.version).toBe(255);
    expect(f.runtimes.pasta?.version).toBe("2023_05_09.96f8d55-10-gf1e0a67");
    expect(f.user.subuid.ranges).toEqual([{ start: 524288, count: 65536 }]);
  });

  it("Fedora 40 without getcap: capabilities are reported unknown, not absent", async () => {
    const h = fixtureHost("fedora-40", { commands: {} });
    const f = await gatherFacts(h);
    expect(f.user.newuidmap).toMatchObject({ capabilities: null, capabilitiesKnown: false, privileged: false });
  });

  it("CentOS 7: v1, no user namespaces (max 0), boot flag missing, no newuidmap", async () => {
    const f = await gatherFacts(fixtureHost("centos-7"));
    expect(f.cgroup.mode).toBe("v1");
    expect(f.cgroup.v2Mount).toBeNull();
    expect(f.userns).toMatchObject({ maxUserNamespaces: 0, rhel7BootFlagMissing: true });
    expect(f.user.newuidmap.path).toBeNull();
    expect(f.systemd).toMatchObject({ version: 219, userManager: false });
    expect(f.kernel.version).toEqual([3, 10, 0]);
  });

  it("RHEL 8 family: CRI-O's el8 build version without its packaging suffix", async () => {
    const f = await gatherFacts(fixtureHost("rocky-8"));
    expect(f.runtimes.crio).toMatchObject({ version: "1.18.3", raw: "crio version 1.18.3-15.rhaos4.5.gitae4ef7b.el8" });
    expect(f.features.overlayRootless).toEqual({ ok: null, basis: "unknown" });
  });

  it("systemd's version from libsystemd-shared where RHEL 9, openSUSE and Fedora install it (/usr/lib64/systemd), without running systemctl", async () => {
    for (const [name, version] of [
      ["rocky-9", 252],
      ["opensuse-leap-15.6", 254],
      ["fedora-40", 255],
    ] as const) {
      const h = fixtureHost(name);
      expect((await gatherFacts(h)).systemd.version, name).toBe(version);
      expect(h.calls, name).not.toContain("systemctl --version");
    }
  });

  it("sysctls as real hosts read them: Debian's userns switch, the kernel's inotify defaults, Arch's raised ones, no port sysctl on CentOS 7's 3.10", async () => {
    const debian = await gatherFacts(fixtureHost("debian-12"));
    expect(debian.userns).toMatchObject({ unprivilegedUsernsClone: 1, maxUserNamespaces: 3663 });
    expect(debian.features).toMatchObject({ inotifyMaxUserInstances: 128, inotifyMaxUserWatches: 8192, ipUnprivilegedPortStart: 1024 });
    expect((await gatherFacts(fixtureHost("arch"))).features).toMatchObject({
      inotifyMaxUserInstances: 1024,
      inotifyMaxUserWatches: 524288,
    });
    expect((await gatherFacts(fixtureHost("centos-7"))).features.ipUnprivilegedPortStart).toBeNull();
  });

  it("WSL 1 and WSL 2 from /proc/version; Alpine and WSL without systemd as PID 1", async () => {
    expect((await gatherFacts(fixtureHost("wsl1-ubuntu-18.04"))).kernel.wsl).toBe(1);
    const wsl2 = await gatherFacts(fixtureHost("wsl2-ubuntu-22.04"));
    expect(wsl2.kernel).toMatchObject({ wsl: 2, release: "5.4.72-microsoft-standard-WSL2" });
    expect(wsl2.systemd.pid1).toBe(false);
    const alpine = await gatherFacts(fixtureHost("alpine-3.18"));
    expect(alpine.systemd).toMatchObject({ pid1: false, version: null, linger: null, userManager: false });
    expect(alpine.distro.family).toBe("alpine");
  });

  it("--user: evaluates another user by name or UID, the user manager from its socket", async () => {
    for (const spec of ["user1", "1000"]) {
      const h = fixtureHost("debian-12", { ids: { uid: 0, gid: 0 } });
      const f = await gatherFacts(h, { user: spec });
      expect(f.user).toMatchObject({ name: "user1", uid: 1000, evaluatedOther: true, home: "/home/user1" });
      expect(f.systemd.userManager).toBe(true);
      expect(h.calls).not.toContain("systemctl --user show-environment");
      expect(f.userns.smokeTest).toBeNull();
    }
    await expect(gatherFacts(fixtureHost("debian-12"), { user: "nobody-such" })).rejects.toBeInstanceOf(UnknownUserError);
  });

  it("ports: who listens on each port (the socket's uid, named from /etc/passwd), and the request", async () => {
    const f = await gatherFacts(fixtureHost("debian-12"), { ports: [6443, 2024], ownPorts: [7443] });
    expect(f.network.listeners).toContainEqual({ port: 2024, uid: 0, address: "0.0.0.0" });
    expect(f.network.listenerNames[0]).toBe("root");
    expect(f.network).toMatchObject({ wantedPorts: [6443, 2024], apiPortFixed: false, ownPorts: [7443] });
    expect(f.network.routes).toContainEqual({ cidr: "0.0.0.0/0", iface: "eth0" });
  });

  it("every command probe is bounded: a command that times out is noted, not waited for", async () => {
    const h = fixtureHost("debian-12", { commands: { "containerd --version": { timedOut: true } } });
    const f = await gatherFacts(h);
    expect(f.runtimes.containerd).toMatchObject({ path: "/usr/bin/containerd", version: null });
    expect(f.notes.join("\n")).toMatch(/`containerd --version` gave no answer within \d+ ms/);
  });
});
