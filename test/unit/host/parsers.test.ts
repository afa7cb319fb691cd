// Parser rules that the corpus tables do not pin down on their own: version normalisation examples
// from the issue, AppArmor attachment globs, subordinate id ranges, and small /proc formats.
import { describe, expect, it } from "vitest";
import { attachRegExp, profileCovers, usernsProfilesIn } from "../../../cli/host/parse/apparmor";
import { atLeast, parseNftVersion, upstreamVersion } from "../../../cli/host/parse/versions";
import { parseListeners, parseModulesBuiltin, parseRoutes } from "../../../cli/host/parse/procfs";
import { inRanges, parseGetsubids, rangesOverlap } from "../../../cli/host/parse/subid";
import { nextFreeStart } from "../../../cli/host/probes/user";
import { familyOf } from "../../../cli/host/parse/os-release";

describe("upstreamVersion", () => {
  it.each([
    ["1.6.20~ds1-1+deb12u3", "1.6.20"],
    ["1.3.3-0ubuntu1~18.04.4", "1.3.3"],
    ["v1.7.18", "1.7.18"],
    ["0.12.1.474-f5a2b5", "0.12.1"],
    ["1.18.3-15.rhaos4.5.gitae4ef7b.el8", "1.18.3"],
    ["20.10.24+dfsg1", "20.10.24"],
    ["1.2.0-rc.2", "1.2.0-rc.2"],
    ["1.0.0-rc92", "1.0.0-rc92"],
    ["17.06.0-ce", "17.06.0-ce"],
    ["1.1.0+dev", "1.1.0+dev"],
    ["dev", null],
    ["", null],
  ])("%s -> %s", (raw, want) => expect(upstreamVersion(raw)).toBe(want));

  it("compares numeric parts for the floors", () => {
    expect(atLeast("19.03.13", "19.03")).toBe(true);
    expect(atLeast("18.09.9", "19.03")).toBe(false);
    expect(atLeast("1.4.0-rc.1", "1.4")).toBe(true);
    expect(atLeast(null, "1.0")).toBe(false);
  });
});

describe("nft --version", () => {
  it("reads the version of `nftables vX.Y.Z (release name)`", () => {
    // Recorded on the development VM (Debian 12); test/golden/data/netfilter-debian12.
    expect(parseNftVersion("nftables v1.0.6 (Lester Gooch #5)\n").version).toBe("1.0.6");
    expect(parseNftVersion("nft: command not found").version).toBeNull();
  });
});

describe("AppArmor attachments", () => {
  const profile = (attach: string) => ({ attach, file: "/etc/apparmor.d/x" });
  it("matches exact paths, * within a segment, ** across segments, {a,b} and @{HOME}", () => {
    expect(profileCovers(profile("/usr/bin/rootlesskit"), "/usr/bin/rootlesskit")).toBe(true);
    expect(profileCovers(profile("/usr/bin/rootlesskit"), "/usr/local/bin/rootlesskit")).toBe(false);
    const mine = "/home/alice/.local/share/rootless-k8s/versions/*/bin/rootlesskit";
    expect(profileCovers(profile(mine), "/home/alice/.local/share/rootless-k8s/versions/2026.1/bin/rootlesskit")).toBe(true);
    expect(profileCovers(profile(mine), "/home/alice/.local/share/rootless-k8s/versions/a/b/bin/rootlesskit")).toBe(false);
    expect(profileCovers(profile("/home/**/rootlesskit"), "/home/alice/bin/rootlesskit")).toBe(true);
    expect(profileCovers(profile("/usr/{bin,sbin}/rootlesskit"), "/usr/sbin/rootlesskit")).toBe(true);
    expect(profileCovers(profile("@{HOME}/bin/rootlesskit"), "/home/alice/bin/rootlesskit")).toBe(true);
    expect(profileCovers(profile("@{HOME}/bin/rootlesskit"), "/root/bin/rootlesskit")).toBe(true);
    expect(profileCovers(profile("@{exec_path}"), "/usr/bin/rootlesskit")).toBe(false);
    expect(attachRegExp("/a.b/c").test("/aXb/c")).toBe(false);
  });

  it("takes only profiles that grant userns, and never rule lines as headers", () => {
    const withUserns =
      "abi <abi/4.0>,\ninclude <tunables/global>\nprofile rk /opt/rk/rootlesskit flags=(unconfined) {\n  userns,\n  @{exec_path} mr,\n}\n";
    expect(usernsProfilesIn(withUserns, "f")).toEqual([{ attach: "/opt/rk/rootlesskit", file: "f" }]);
    expect(usernsProfilesIn("/usr/sbin/cupsd flags=(attach_disconnected) {\n  network,\n}\n", "g")).toEqual([]);
  });
});

describe("subordinate ids", () => {
  it("finds overlaps and real ids inside ranges", () => {
    expect(rangesOverlap({ start: 100000, count: 65536 }, { start: 165535, count: 10 })).toBe(true);
    expect(rangesOverlap({ start: 100000, count: 65536 }, { start: 165536, count: 10 })).toBe(false);
    expect(inRanges(165535, [{ start: 100000, count: 65536 }])).toBe(true);
  });
  it("places a new range above every existing one, aligned to 65536", () => {
    expect(nextFreeStart([])).toBe(131072);
    expect(nextFreeStart([{ owner: "a", start: 100000, count: 65536 }])).toBe(196608);
    expect(nextFreeStart([{ owner: "a", start: 524288, count: 65536 }])).toBe(589824);
  });
  it("reads getsubids output (shadow >= 4.11)", () => {
    expect(parseGetsubids("0: alice 100000 65536\n1: alice 300000 1000\n")).toEqual([
      { owner: "alice", start: 100000, count: 65536 },
      { owner: "alice", start: 300000, count: 1000 },
    ]);
  });
});

describe("small /proc formats", () => {
  it("routes, listening ports, modules.builtin", () => {
    const route =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\neth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
    expect(parseRoutes(route)).toEqual([
      { cidr: "0.0.0.0/0", iface: "eth0" },
      { cidr: "192.0.2.0/24", iface: "eth0" },
    ]);
    // Lines of this machine's /proc/net/tcp and tcp6: LISTEN (0A) only, each with its owner's uid (the 8th field).
    const tcp = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:192B 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1006        0 5512 1 0000000000000000 100 0 0 10 0",
      "   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 71 1 00000000b96b2f8a 100 0 0 10 0",
      "   2: 0100007F:937E 0100007F:9ECB 06 00000000:00000000 03:0000080C 00000000     0        0 0 3 000000003d91b417",
    ].join("\n");
    const tcp6 = [
      "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 00000000000000000000000000000000:192C 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1005        0 9 1 0 100 0 0 10 0",
      "   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1005        0 9 1 0 100 0 0 10 0",
      "   2: 0000000000000000FFFF00000100007F:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1005        0 9 1 0 100 0 0 10 0",
    ].join("\n");
    expect(parseListeners(tcp, tcp6)).toEqual([
      { port: 2024, uid: 0, address: "0.0.0.0" },
      { port: 6443, uid: 1006, address: "127.0.0.1" },
      { port: 6444, uid: 1005, address: "::" },
      { port: 8080, uid: 1005, address: "::1" },
      { port: 8081, uid: 1005, address: "127.0.0.1" },
    ]);
    expect([...parseModulesBuiltin("kernel/net/ipv4/netfilter/ip_tables.ko\nkernel/drivers/net/tun.ko.zst\nkernel/net/x-y.ko\n")]).toEqual([
      "ip_tables",
      "tun",
      "x_y",
    ]);
  });
  it("families of distributions by ID and ID_LIKE", () => {
    expect(familyOf("openEuler", [])).toBe("other");
    expect(familyOf("manjaro-arm", [])).toBe("arch");
    expect(familyOf("fedoraremixforwsl", ["fedora"])).toBe("rhel");
    expect(familyOf("opensuse-leap", ["suse", "opensuse"])).toBe("suse");
  });
});
