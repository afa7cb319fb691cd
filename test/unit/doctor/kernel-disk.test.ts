// What doctor says about br_netfilter, the inotify quota and the data folder's file system, as the
// kubelet, kube-proxy and cAdvisor sources read for issue 9 say it (docs/upstream-notes.md, item 7).
import { describe, expect, it } from "vitest";
import { kernelChecks } from "../../../cli/doctor/checks/kernel";
import { networkChecks } from "../../../cli/doctor/checks/network";
import type { Facts } from "../../../cli/host/facts";
import { baseFacts, withFacts } from "../plan/facts-builder";

const check = (id: string, f: Facts) => {
  const c = [...kernelChecks, ...networkChecks].find((x) => x.id === id);
  if (!c) throw new Error(`no check ${id}`);
  return c.run(f);
};

describe("kernel modules", () => {
  it("says what a missing br_netfilter costs: Services work (masqueradeAll), the source address is the bridge's", () => {
    const r = check(
      "kernel-modules",
      withFacts(baseFacts(), (f) => (f.features.modules = { overlay: "loaded", br_netfilter: "missing" })),
    );
    expect(r.status).toBe("warn");
    expect(r.summary).toMatch(
      /^not loaded: br_netfilter; a user cannot load modules; without br_netfilter, .*Services still work because kube-proxy masquerades them \(masqueradeAll\), but pods see the bridge's address/,
    );
    expect(r.fix?.root.join("\n")).toContain("modprobe -a br_netfilter");
  });
  it("does not mention it when only another module is missing", () => {
    const r = check(
      "kernel-modules",
      withFacts(baseFacts(), (f) => (f.features.modules = { br_netfilter: "loaded", xt_nat: "missing" })),
    );
    expect(r.summary).toBe("not loaded: xt_nat; a user cannot load modules");
  });
});

describe("inotify", () => {
  it("names cAdvisor's watches on the host's cgroup tree and what happens when they run out", () => {
    const r = check(
      "inotify",
      withFacts(baseFacts(), (f) => (f.features.inotifyMaxUserWatches = 8192)),
    );
    expect(r.status).toBe("warn");
    expect(r.summary).toMatch(
      /cAdvisor watches every directory of the host's cgroup tree .*charged to alice, and the kubelet exits when it runs out/,
    );
  });
});

describe("data folder file system", () => {
  const on = (fsType: string) =>
    check(
      "disk",
      withFacts(baseFacts(), (f) => (f.disk = { ...f.disk, fsType })),
    );
  it("warns on fuse: cAdvisor keeps no statistics, /stats/summary fails", () => {
    expect(on("fuse")).toMatchObject({ status: "warn", summary: expect.stringMatching(/is on fuse: .*\/stats\/summary fails/) });
  });
  it("warns on tmpfs: the node's data is gone after a reboot", () => {
    expect(on("tmpfs")).toMatchObject({ status: "warn", summary: expect.stringMatching(/is on tmpfs: .*gone after a reboot/) });
  });
  it("fails with too little room on any file system, fuse and tmpfs too: install would stop half-way (#35)", () => {
    for (const fsType of ["tmpfs", "fuse", "ext4"]) {
      const small = withFacts(baseFacts(), (f) => (f.disk = { ...f.disk, fsType, freeBytes: 512 * 1024 ** 2 }));
      expect(check("disk", small)).toMatchObject({
        status: "fail",
        summary: `only 0.5 GiB free in /home/alice/.local/share (${fsType}): the node needs at least 2 GiB (binaries, images, etcd)`,
      });
    }
  });
  it("is fine on zfs and ext4 with room", () => {
    expect(on("zfs")).toMatchObject({ status: "ok", summary: "46.6 GiB free in /home/alice/.local/share (zfs)" });
    expect(on("ext4").status).toBe("ok");
  });
});

describe("eviction: whether the kubelet can read the data folder's file system", () => {
  const on = (fsType: string | null, devMajor: number | null) =>
    check(
      "eviction",
      withFacts(baseFacts(), (f) => (f.disk = { ...f.disk, fsType, devMajor })),
    );
  it("is fine on a block device: the eviction manager observes memory, disk and PIDs", () => {
    expect(on("ext4", 254)).toMatchObject({
      status: "ok",
      summary: expect.stringMatching(/observe memory, disk and PIDs: .* is on a block device \(ext4, device major 254\)/),
    });
  });
  it("warns without a block device (NFS, ZFS, tmpfs: device major 0): no eviction at all", () => {
    expect(on("zfs", 0)).toMatchObject({
      status: "warn",
      summary: expect.stringMatching(/without a block device \(zfs, device major 0\).*eviction manager never runs/),
    });
  });
  it("says nothing it does not know: an unknown device is skipped", () => {
    expect(on(null, null).status).toBe("skip");
  });
});
