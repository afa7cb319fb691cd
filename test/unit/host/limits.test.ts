// The per-user limits a full node meets (issue 45), read from this machine's own /proc formats:
// lines copied from the development VM (Debian 12, kernel 6.x) on 2026-12-06.
import { describe, expect, it } from "vitest";
import { parseKeyUsers, parseMaxProcesses, threadsOf } from "../../../cli/host/parse/limits";
import { gatherFacts } from "../../../cli/host/gather";
import { FileRoot, type Host, localHost } from "../../../cli/host/host";
import { userLimitFacts } from "../../../cli/host/probes/limits";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tempDir } from "../../helpers/temp";

describe("per-user limits", () => {
  it("reads a uid's keys and quota from /proc/key-users", () => {
    const text = "    0:     9 8/8 3/1000000 48/25000000\n 1005:     2 2/2 2/200 28/20000\n";
    expect(parseKeyUsers(text, 1005)).toEqual({ used: 2, max: 200 });
    expect(parseKeyUsers(text, 0)).toEqual({ used: 3, max: 1000000 });
    expect(parseKeyUsers(text, 1006)).toBeNull();
  });
  it("reads RLIMIT_NPROC's soft limit and a process's threads", () => {
    const limits =
      "Limit                     Soft Limit           Hard Limit           Units     \nMax processes             96367                96367                processes \nMax open files            20000                20000                files     \n";
    expect(parseMaxProcesses(limits)).toBe(96367);
    expect(parseMaxProcesses(limits.replace("96367  ", "unlimited"))).toBeNull();
    expect(parseMaxProcesses("")).toBeUndefined();
    expect(threadsOf("Name:\tcontainerd\nThreads:\t12\n")).toBe(12);
  });
  it("reads the lowest pids.max of the user's slice and manager in the v2 tree; max is no bound", async () => {
    const root = tempDir("rk8s-pids-");
    const put = (p: string, text: string) => {
      mkdirSync(join(root, dirname(p)), { recursive: true });
      writeFileSync(join(root, p), text);
    };
    const probe = () => userLimitFacts({ host: new FileRoot(root) as unknown as Host, user: { uid: 1000, other: true } as never });
    expect((await probe()).pidsMax).toBeNull();
    // The files as cgroup v2 writes them: systemd's UserTasksMax= on the slice, the manager unbounded.
    put("sys/fs/cgroup/user.slice/user-1000.slice/pids.max", "10813\n");
    put("sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/pids.max", "max\n");
    expect((await probe()).pidsMax).toEqual({ max: 10813, cgroup: "user-1000.slice" });
    put("sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/pids.max", "4096\n");
    expect((await probe()).pidsMax).toEqual({ max: 4096, cgroup: "user@1000.service" });
    // cgroup v1 and hybrid hosts: the pids controller's own hierarchy, where systemd writes TasksMax=.
    put("sys/fs/cgroup/pids/user.slice/user-1000.slice/pids.max", "2048\n");
    expect((await probe()).pidsMax).toEqual({ max: 2048, cgroup: "user-1000.slice" });
  });
  it("gathers them on this machine: this process's own limit and threads", async () => {
    const f = await gatherFacts(localHost());
    expect(f.limits?.threads).toBeGreaterThanOrEqual(1);
    expect(f.limits?.keys?.max).toBeGreaterThan(0);
    const own = parseMaxProcesses(await localHost().readText("/proc/self/limits"));
    expect(f.limits?.nproc).toBe(own === null ? "unlimited" : own);
  });
});
