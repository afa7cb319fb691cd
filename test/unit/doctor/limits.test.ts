// Doctor's per-user limits (issue 45): the pods each limit allows beside the node, from the figures
// the e2e's scale scenario measured; the lowest named with its fix when it is below the kubelet's 110.
import { describe, expect, it } from "vitest";
import { MEASURED, podLimitsResult } from "../../../cli/doctor/checks/limits";
import type { UserLimitFacts } from "../../../cli/host/facts";
import { baseFacts, withFacts } from "../plan/facts-builder";

const limits = (l: Partial<UserLimitFacts>) =>
  withFacts(baseFacts(), (f) => {
    f.limits = { keys: { used: 4, max: 200 }, nproc: 96367, threads: 175, threadsMax: 192734, ...l };
  });

describe("pod-limits", () => {
  it("a stock Debian host: 110 pods fit; threads are the first bound; keys bound only a keyring-per-container runtime", () => {
    const r = podLimitsResult(limits({}));
    expect(r.status).toBe("ok");
    expect(r.summary).toMatch(/^the kubelet's 110 pods fit \(first bound: processes and threads, about 6774 pods\)/);
    expect(r.summary).toContain("keys: 4 of 200 (kernel.keys.maxkeys): none per pod with containerd, the default");
    expect(r.summary).toContain("about 98 pods with CRI-O or Docker");
  });
  it("a low ulimit -u: a warning naming the pods it allows and the root fix for this user", () => {
    const r = podLimitsResult(limits({ nproc: 1000, threads: 120 }));
    expect(r.status).toBe("warn");
    // The node's own measured threads count while it is not running yet: (1000 - 175) / 14.2.
    expect(r.summary).toMatch(/^processes and threads allow about 58 pods, fewer than the kubelet's 110/);
    expect(r.fix?.root?.[0]).toContain("'alice soft nproc 65536'");
    expect(Math.floor((1000 - MEASURED.nodeThreads) / MEASURED.threadsPerPod)).toBe(58);
  });
  it("with CRI-O on the host, the keys quota bounds pods: a warning with the sysctl fix", () => {
    const f = limits({});
    f.runtimes.crio = { path: "/usr/bin/crio", version: "1.36.3" } as never;
    const r = podLimitsResult(f);
    expect(r.status).toBe("warn");
    expect(r.summary).toMatch(/^keys allow about 98 pods, fewer than the kubelet's 110/);
    expect(r.fix?.root?.join("\n")).toContain("kernel.keys.maxkeys = 2000");
  });
  it("mode delegated: the user slice's pids.max bounds tasks like ulimit -u, the lower of the two first, with its own fix", () => {
    // systemd's UserTasksMax= (33% of kernel.pid_max) on a host whose pid_max is 32768: 10813.
    const slice = podLimitsResult(limits({ nproc: "unlimited", pidsMax: { max: 10813, cgroup: "user-1000.slice" }, threads: 300 }));
    expect(slice.status).toBe("ok");
    expect(slice.summary).toContain("processes and threads: pids.max 10813 of user-1000.slice, 300 in use: about 740 pods");
    const low = podLimitsResult(limits({ nproc: 96367, pidsMax: { max: 1200, cgroup: "user@1000.service" }, threads: 300 }));
    expect(low.status).toBe("warn");
    expect(low.summary).toMatch(/^processes and threads allow about 63 pods, fewer than the kubelet's 110/);
    expect(low.fix?.root).toEqual(["systemctl set-property user@1000.service TasksMax=infinity"]);
  });
  it("limits that cannot hold even the add-ons' 3 pods beside the node: a failure, with the fix", () => {
    const r = podLimitsResult(limits({ nproc: 200, threads: 150 }));
    expect(r.status).toBe("fail");
    expect(r.summary).toMatch(
      /^processes and threads allow about 1 pods beside the node: not even its 3 add-on pods \(DNS, storage, metrics\) fit/,
    );
    expect(r.fix?.root?.[0]).toContain("'alice soft nproc 65536'");
  });
  it("unlimited, or unknown for another user: never a guess", () => {
    expect(podLimitsResult(limits({ nproc: "unlimited" })).summary).toContain("processes and threads: ulimit -u unlimited");
    expect(podLimitsResult(limits({ nproc: null, keys: null })).status).toBe("skip");
    expect(podLimitsResult(withFacts(baseFacts(), (f) => delete f.limits)).status).toBe("skip");
  });
});
