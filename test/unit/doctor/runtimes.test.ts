// The runtime checks on one host at a time: what they say about a rootless dockerd whose cgroup
// driver is "none" and about a containerd 1.x, each read in upstream's source (docs/upstream-notes.md).
import { describe, expect, it } from "vitest";
import { runtimeChecks } from "../../../cli/doctor/checks/runtimes";
import type { DockerFacts, Facts } from "../../../cli/host/facts";
import { baseFacts, withFacts } from "../plan/facts-builder";

const check = (id: string, f: Facts) => {
  const c = runtimeChecks.find((x) => x.id === id);
  if (!c) throw new Error(`no check ${id}`);
  return c.run(f);
};

const dockerd = (cgroupDriver: string): DockerFacts => ({
  version: "24.0.7",
  raw: "",
  path: "/usr/bin/docker",
  clientVersion: "24.0.7",
  serverVersion: "24.0.7",
  serverReachable: true,
  rootless: true,
  cgroupDriver,
  cgroupVersion: "1",
  socket: "unix:///run/user/1000/docker.sock",
});

describe("Docker", () => {
  it("warns that a rootless dockerd reporting cgroup driver none cannot serve a kubelet >= 1.34", () => {
    const r = check("docker", withFacts(baseFacts(), (f) => (f.runtimes.docker = dockerd("none"))));
    expect(r.status).toBe("warn");
    expect(r.summary).toMatch(/^Docker 24\.0\.7; rootless daemon, cgroup driver none: --runtime docker cannot serve Kubernetes 1\.34\+/);
    expect(r.fix?.user.join(" ")).toMatch(/without --runtime docker/);
  });
  it("is fine with the systemd driver", () => {
    const r = check("docker", withFacts(baseFacts(), (f) => (f.runtimes.docker = { ...dockerd("systemd"), cgroupVersion: "2" })));
    expect(r).toMatchObject({ status: "ok", summary: "Docker 24.0.7; rootless daemon, cgroup driver systemd", fix: null });
  });
});

describe("containerd", () => {
  it("says a 1.x cannot be --runtime-bin for Kubernetes 1.36+, and a 2.x can", () => {
    const one = check("containerd", withFacts(baseFacts(), (f) => (f.runtimes.containerd = { version: "1.6.20", raw: "", path: "/usr/bin/containerd" })));
    expect(one).toMatchObject({ status: "ok", summary: "containerd 1.6.20 (1.x: not for --runtime-bin with Kubernetes 1.36+; the node uses its own 2.x)" });
    const two = check("containerd", withFacts(baseFacts(), (f) => (f.runtimes.containerd = { version: "2.1.4", raw: "", path: "/usr/bin/containerd" })));
    expect(two.summary).toBe("containerd 2.1.4");
  });
});
