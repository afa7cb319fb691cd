// The loader each runtime gets, computed from the plan alone (the real load runs in the e2e).
import { describe, expect, it } from "vitest";
import { imageLoader, repositoryOf, targetDigest } from "../../../cli/apply/images";
import { buildPlan } from "../../../cli/plan/index";
import { userErrorFrom } from "../../helpers/errors";
import { baseFacts, rootlessDocker, upstreamVersions, withFacts } from "../plan/facts-builder";

describe("imageLoader", () => {
  const versions = upstreamVersions();
  it("containerd: the set's ctr on the node's socket, namespace k8s.io, the node's platform and snapshotter", () => {
    const plan = buildPlan(baseFacts(), {}, versions);
    expect(imageLoader(plan, "/tmp/busybox.tar")).toEqual({
      cmd: "/home/alice/.local/share/rootless-k8s/versions/current/bin/ctr",
      argv: [
        "--address",
        "/run/user/1000/rootless-k8s/containerd/containerd.sock",
        "--namespace",
        "k8s.io",
        "images",
        "import",
        "--platform",
        "linux/amd64",
        "--snapshotter",
        plan.runtime.snapshotter!.name,
        "/tmp/busybox.tar",
      ],
      socket: "/run/user/1000/rootless-k8s/containerd/containerd.sock",
    });
    expect(imageLoader(plan, "/x").argv).not.toContain("--no-unpack");
  });
  it("names a loaded image by its digest: the target digest from ctr images ls, under the image's repository", () => {
    const d = `sha256:${"d0".repeat(32)}`;
    const listing = `REF TYPE DIGEST SIZE PLATFORMS LABELS\nregistry.k8s.io/coredns/coredns:v1.14.3 application/vnd.oci.image.manifest.v1+json ${d} 71.3 MiB linux/amd64 -\n`;
    expect(targetDigest(listing, "registry.k8s.io/coredns/coredns:v1.14.3")).toBe(d);
    expect(targetDigest(listing, "registry.k8s.io/coredns/coredns:v1")).toBeNull();
    expect(repositoryOf("registry.k8s.io/coredns/coredns:v1.14.3")).toBe("registry.k8s.io/coredns/coredns");
    expect(repositoryOf("localhost:5000/a/b:1")).toBe("localhost:5000/a/b");
    expect(repositoryOf("docker.io/library/busybox:1.36.1")).toBe("docker.io/library/busybox");
  });
  it("containerd from --runtime-bin: the ctr next to it", () => {
    const plan = buildPlan(baseFacts(), { runtimeBin: "/usr/bin/containerd", runtimeBinVersion: "1.7.24" }, versions);
    expect(imageLoader(plan, "/x").cmd).toBe("/usr/bin/ctr");
  });
  it("docker: docker load on the user's rootless dockerd; CRI-O: refused, naming skopeo (exit 3)", () => {
    const docker = rootlessDocker();
    const plan = buildPlan(
      withFacts(baseFacts(), (x) => (x.runtimes.docker = docker)),
      { runtime: "docker" },
      versions,
    );
    expect(imageLoader(plan, "/x")).toEqual({
      cmd: "docker",
      argv: ["--host", "unix:///run/user/1000/docker.sock", "load", "--input", "/x"],
      socket: "/run/user/1000/docker.sock",
    });
    // An OCI layout without manifest.json goes in on stdin, with one put in front (dockerLoadStream).
    expect(imageLoader(plan, "/x", { stdin: true }).argv).toEqual(["--host", "unix:///run/user/1000/docker.sock", "load"]);
    const crio = buildPlan(baseFacts(), { runtime: "crio" }, versions);
    const e = userErrorFrom(() => imageLoader(crio, "/x"));
    expect(e.exitCode).toBe(3);
    expect(e.message).toMatch(/needs skopeo/);
  });
});
