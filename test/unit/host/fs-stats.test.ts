// The rule plan and doctor share (cli/host/fs-stats.ts), and the fact it reads: the device major
// number the real host's statfs reports, checked against the kernel's own mount table.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { fsStats } from "../../../cli/host/fs-stats";
import { localHost } from "../../../cli/host/host";

/** The major number /proc/self/mountinfo gives the mount at `mountpoint` (field 3, "major:minor"). */
function mountinfoMajor(mountpoint: string): number | undefined {
  const line = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((l) => l.split(" ")[4] === mountpoint)
    .pop();
  return line ? Number(line.split(" ")[2]!.split(":")[0]) : undefined;
}

describe("fsStats", () => {
  it("readable on a block device, not on one without (major 0) or an unknown one", () => {
    expect(fsStats({ dataDir: "/d", fsType: "ext4", devMajor: 8 }).readable).toBe(true);
    expect(fsStats({ dataDir: "/d", fsType: "nfs", devMajor: 0 })).toEqual({
      readable: false,
      reason: "/d is on a file system without a block device (nfs, device major 0), which the kubelet's cAdvisor does not find",
    });
    expect(fsStats({ dataDir: "/d", fsType: null, devMajor: null }).readable).toBe(false);
  });
});

describe("the local host's statfs: devMajor", () => {
  const host = localHost();
  it("is the major number the mount table gives, for / and for /proc (no block device: 0)", async () => {
    expect((await host.statfs("/proc"))?.devMajor).toBe(0);
    expect((await host.statfs("/"))?.devMajor).toBe(mountinfoMajor("/"));
  });
  it("of a path that does not exist yet: its nearest existing parent's", async () => {
    expect((await host.statfs("/proc/no/such/folder"))?.devMajor).toBe(0);
  });
});
