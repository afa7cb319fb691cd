// The runtime checks on one host at a time: what they say about a rootless dockerd whose cgroup
// driver is "none" and about a containerd 1.x, each read in upstream's source (docs/upstream-notes.md).
import { describe, expect, it } from "vitest";
import { runtimeChecks } from "../../../cli/doctor/checks/runtimes";
import { DOCKERD_LIMITS_WORDS } from "../../../cli/doctor/verdict";
import type { DockerFacts, Facts } from "../../../cli/host/facts";
import { baseFacts, rootlessDocker, withFacts } from "../plan/facts-builder";

const check = (id: string, f: Facts) => {
  const c = runtimeChecks.find((x) => x.id === id);
  if (!c) throw new Error(`no check ${id}`);
  return c.run(f);
};

const dockerd = (cgroupDriver: string): DockerFacts => rootlessDocker({ cgroupDriver });

describe("Docker", () => {
  it("warns that a rootless dockerd reporting cgroup driver none cannot serve a kubelet >= 1.34", () => {
    const r = check(
      "docker",
      withFacts(baseFacts(), (f) => (f.runtimes.docker = dockerd("none"))),
    );
    expect(r.status).toBe("warn");
    expect(r.summary).toMatch(/^Docker 24\.0\.7; rootless daemon, cgroup driver none: --runtime docker cannot serve Kubernetes 1\.34\+/);
    expect(r.fix?.user.join(" ")).toMatch(/without --runtime docker/);
  });
  it("is fine with the systemd driver, and says what a node on it gets: dockerd's per-container limits in mode none", () => {
    const r = check(
      "docker",
      withFacts(baseFacts(), (f) => (f.runtimes.docker = { ...dockerd("systemd"), cgroupVersion: "2" })),
    );
    expect(r).toMatchObject({
      status: "ok",
      summary: `Docker 24.0.7; rootless daemon, cgroup driver systemd: with --runtime docker --mode none, ${DOCKERD_LIMITS_WORDS}`,
      fix: null,
    });
  });

  it("names dockerd's image store where docker info gives it", () => {
    const on = (imageStore: "containerd" | "classic") =>
      check(
        "docker",
        withFacts(baseFacts(), (f) => (f.runtimes.docker = { ...dockerd("cgroupfs"), imageStore })),
      ).summary;
    expect(on("classic")).toBe("Docker 24.0.7; rootless daemon, cgroup driver cgroupfs, classic image store");
    expect(on("containerd")).toBe("Docker 24.0.7; rootless daemon, cgroup driver cgroupfs, containerd image store");
  });
});

describe("containerd", () => {
  it("says a 1.x cannot be --runtime-bin for Kubernetes 1.36+, and a 2.x can", () => {
    const one = check(
      "containerd",
      withFacts(baseFacts(), (f) => (f.runtimes.containerd = { version: "1.6.20", raw: "", path: "/usr/bin/containerd" })),
    );
    expect(one).toMatchObject({
      status: "ok",
      summary: "containerd 1.6.20 (1.x: not for --runtime-bin with Kubernetes 1.36+; the node uses its own 2.x)",
    });
    const two = check(
      "containerd",
      withFacts(baseFacts(), (f) => (f.runtimes.containerd = { version: "2.1.4", raw: "", path: "/usr/bin/containerd" })),
    );
    expect(two.summary).toBe("containerd 2.1.4");
  });
});

describe("iptables, and kube-proxy's nftables mode without it", () => {
  const noIptables = (change: (f: Facts) => void = () => {}) =>
    withFacts(baseFacts(), (f) => {
      f.runtimes.iptables = null;
      change(f);
    });
  const nft = { version: "1.0.6", raw: "nftables v1.0.6 (Lester Gooch #5)", path: "/usr/sbin/nft" };

  it("says kube-proxy has no backend below kernel 5.13, with the fix to install iptables", () => {
    const r = check(
      "iptables",
      noIptables((f) => {
        f.kernel = { ...f.kernel, release: "5.11.0-37-generic", version: [5, 11, 0] };
        f.runtimes.nft = nft;
      }),
    );
    expect(r.status).toBe("warn");
    expect(r.summary).toBe(
      "iptables not found, and kube-proxy refuses nftables mode below kernel 5.13 (this kernel is 5.11.0-37-generic): kube-proxy has no backend, so install refuses",
    );
    expect(r.fix?.root).toEqual(["apt-get install -y iptables"]);
  });
  it("says so when the nft command is missing or older than 1.0.1", () => {
    expect(check("iptables", noIptables()).summary).toMatch(
      /runs the nft command \(1\.0\.1 or later\), which is not installed: kube-proxy has no backend/,
    );
    expect(
      check(
        "iptables",
        noIptables((f) => (f.runtimes.nft = { ...nft, version: "0.9.8" })),
      ).summary,
    ).toMatch(/needs nft 1\.0\.1 or later \(found 0\.9\.8\)/);
  });
  it("is fine with nft 1.0.1+ on kernel 5.13+", () => {
    const r = check(
      "iptables",
      noIptables((f) => (f.runtimes.nft = nft)),
    );
    expect(r).toMatchObject({
      status: "ok",
      summary: "not installed: kube-proxy and the CNI plugins use nftables (nft 1.0.6, kernel 6.1.0-18-amd64)",
      fix: null,
    });
  });
});

describe("RootlessKit, network", () => {
  const debian12Pasta = { version: null, raw: "pasta unknown version", path: "/usr/bin/pasta", hostLoToNsLo: false };
  it("says that Debian 12's pasta is too old for RootlessKit, as the plan refuses --network pasta (not a warning: the node does not need it)", () => {
    const r = check(
      "userns-tools",
      withFacts(baseFacts(), (f) => (f.runtimes.pasta = debian12Pasta)),
    );
    expect(r.status).toBe("ok");
    expect(r.summary).toMatch(
      /pasta \(version unknown\).*older than 2023_12_04.*--network pasta is refused \(slirp4netns or the built-in driver serve instead\)$/,
    );
  });
  it("says nothing of the kind for a pasta that knows --host-lo-to-ns-lo", () => {
    const r = check(
      "userns-tools",
      withFacts(baseFacts(), (f) => (f.runtimes.pasta = { ...debian12Pasta, hostLoToNsLo: true })),
    );
    expect(r).toMatchObject({ status: "ok", summary: expect.not.stringMatching(/refused/) });
  });
});
