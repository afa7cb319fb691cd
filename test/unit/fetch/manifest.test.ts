// The built-in manifest and the --manifest schema: every artifact pinned for both arches with a
// named source, the version set, selection by runtime and network, and one-line refusals.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import builtin from "../../../assets/components.json";
import { loadManifest, parseManifest } from "../../../cli/fetch/manifest";
import { applyMirror, mirrorFrom } from "../../../cli/fetch/mirror";
import { selectArtifacts, versionSet, versionSetId } from "../../../cli/fetch/select";
import { ARCHES, type NETWORKS, type RUNTIMES } from "../../../cli/fetch/types";
import { userErrorFrom } from "../../helpers/errors";
import { tempDir } from "../../helpers/temp";

const clone = () => JSON.parse(JSON.stringify(builtin)) as typeof builtin & { artifacts: Record<string, unknown>[] };

describe("the built-in manifest", () => {
  const m = loadManifest();

  it("pins every artifact for amd64 and arm64 and names where each checksum comes from", () => {
    for (const a of m.artifacts) {
      expect(Object.keys(a.arch).sort(), a.id).toEqual(["amd64", "arm64"]);
      for (const arch of ARCHES) {
        const c = a.checksums[arch];
        expect(c?.value, `${a.id} ${arch}`).toMatch(c?.algorithm === "sha512" ? /^[0-9a-f]{128}$/ : /^[0-9a-f]{64}$/);
        expect(c?.source, `${a.id} ${arch}`).toMatch(/@[0-9a-f]{8}/); // repository path@commit
      }
    }
  });

  it("gives the version set of the issue: Kubernetes 1.36.0 and its runtimes and tools", () => {
    expect(versionSet(m)).toEqual({
      kubernetes: "1.36.0",
      etcd: "3.6.14",
      containerd: "2.3.4",
      runc: "1.4.3",
      "cni-plugins": "1.9.1",
      crictl: "1.36.0",
      rootlesskit: "3.0.2",
      slirp4netns: "1.3.3",
      "cri-o": "1.36.3",
      crun: "1.26",
      "cri-dockerd": "0.3.26",
    });
    expect(versionSetId(m)).toMatch(/^1\.36\.0-[0-9a-f]{10}$/);
    expect(versionSetId(m, "amd64")).not.toBe(versionSetId(m, "arm64"));
    const renamed = {
      ...m,
      name: "other name",
      artifacts: m.artifacts.map((a) => ({ ...a, notes: "changed", url: a.url.replace("https://", "https://mirror.") })),
    };
    expect(versionSetId(renamed, "arm64")).toBe(versionSetId(m, "arm64")); // per arch, only what decides the installed bits counts
  });

  it("takes all seven Kubernetes binaries from the server tarball pinned by its release-notes sha512", () => {
    const [k8s] = selectArtifacts(m, { arch: "arm64", runtime: "containerd", network: "builtin" });
    expect(k8s?.url).toBe("https://dl.k8s.io/v1.36.0/kubernetes-server-linux-arm64.tar.gz");
    expect(k8s?.checksum.algorithm).toBe("sha512");
    expect(k8s?.checksum.source).toContain("CHANGELOG-1.36.md");
    expect(k8s?.binaries.map((b) => b.name).sort()).toEqual(
      ["kube-apiserver", "kube-controller-manager", "kube-proxy", "kube-scheduler", "kubeadm", "kubectl", "kubelet"].sort(),
    );
  });

  it("expands upstream arch tokens and member paths per arch", () => {
    const amd = selectArtifacts(m, { arch: "amd64", runtime: "containerd", network: "slirp4netns" });
    const byId = Object.fromEntries(amd.map((a) => [a.id, a]));
    expect(byId.rootlesskit?.url).toBe(
      "https://github.com/rootless-containers/rootlesskit/releases/download/v3.0.2/rootlesskit-x86_64.tar.gz",
    );
    expect(byId.slirp4netns?.fileName).toBe("slirp4netns-x86_64");
    expect(byId.etcd?.binaries[0]?.path).toBe("etcd-v3.6.14-linux-amd64/etcd");
    expect(byId.containerd?.url).toContain("containerd-static-2.3.4-linux-amd64.tar.gz");
    expect(byId["cni-plugins"]?.binaries.every((b) => b.dir === "cni")).toBe(true);
  });

  it("selects artifacts by runtime, network and mode", () => {
    const ids = (runtime: (typeof RUNTIMES)[number], network: (typeof NETWORKS)[number], mode?: "none" | "delegated") =>
      selectArtifacts(m, { arch: "amd64", runtime, network, ...(mode ? { mode } : {}) }).map((a) => a.id);
    const common = ["kubernetes-server", "etcd", "cni-plugins", "crictl", "rootlesskit"];
    expect(ids("containerd", "slirp4netns", "delegated").sort()).toEqual([...common, "containerd", "runc", "slirp4netns"].sort());
    // mode none with containerd 2: crun (--cgroup-manager=disabled), from the CRI-O bundle's verified file
    expect(ids("containerd", "slirp4netns", "none").sort()).toEqual([...common, "containerd", "runc", "crun", "slirp4netns"].sort());
    // no mode (components, cache fetch): what either mode may need
    expect(ids("containerd", "builtin").sort()).toEqual([...common, "containerd", "runc", "crun"].sort());
    const crun = selectArtifacts(m, { arch: "amd64", runtime: "containerd", network: "builtin", mode: "none" }).find(
      (a) => a.id === "crun",
    )!;
    const crio = selectArtifacts(m, { arch: "amd64", runtime: "crio", network: "builtin" }).find((a) => a.id === "cri-o")!;
    expect(crun.checksum).toEqual(crio.checksum);
    expect(crun.url).toBe(crio.url);
    expect(ids("crio", "pasta").sort()).toEqual([...common, "cri-o"].sort());
    expect(ids("docker", "builtin").sort()).toEqual([...common, "cri-dockerd"].sort());
  });
});

describe("a --manifest file", () => {
  const write = (data: unknown) => {
    const f = join(tempDir(), "m.json");
    writeFileSync(f, typeof data === "string" ? data : JSON.stringify(data));
    return f;
  };

  it("replaces the built-in one when it is valid", () => {
    const data = clone();
    data.name = "private build";
    const m = loadManifest({ file: write(data) });
    expect(m.name).toBe("private build");
    expect(m.origin).toMatch(/m\.json$/);
  });

  it("is refused in one line when an artifact has no checksum for an arch it lists", () => {
    const data = clone();
    delete (data.artifacts[1] as { checksums: Record<string, unknown> }).checksums.arm64;
    const file = write(data);
    const e = userErrorFrom(() => loadManifest({ file }));
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe(
      `manifest ${file}: artifact "etcd" checksums.arm64 is missing; every artifact needs a pinned sha256 or sha512 for each arch it lists`,
    );
    expect(e.message).not.toContain("\n");
    expect(e.fix).toContain("docs/manifest.md");
  });

  const cases: [string, (d: ReturnType<typeof clone>) => void, string][] = [
    [
      "a digest of the wrong length",
      (d) => ((d.artifacts[0] as any).checksums.amd64.value = "abc"),
      'artifact "kubernetes-server" checksums.amd64 value must be 128 lower-case hex digits for sha512',
    ],
    [
      "an empty checksum source",
      (d) => ((d.artifacts[2] as any).checksums.amd64.source = " "),
      'artifact "containerd" checksums.amd64 source is empty',
    ],
    [
      "an unknown placeholder",
      (d) => ((d.artifacts[3] as any).url = "https://x/{os}/runc"),
      'artifact "runc" url has unknown placeholder {os}',
    ],
    ["a member path with ..", (d) => ((d.artifacts[1] as any).binaries[0].path = "../etcd"), "must be a relative path inside the archive"],
    ["two artifacts with one id", (d) => ((d.artifacts[2] as any).id = "etcd"), 'artifacts has two artifacts with id "etcd"'],
    [
      "two artifacts installing one binary",
      (d) => ((d.artifacts[5] as any).binaries[0].name = "runc"),
      'artifacts installs "runc" twice (from "runc" and "crictl")',
    ],
    ["an unknown runtime", (d) => ((d.artifacts[2] as any).when = { runtime: ["podman"] }), "must be one of containerd, crio, docker"],
    ["an unknown mode", (d) => ((d.artifacts[2] as any).when = { mode: ["partial"] }), "must be one of delegated, none"],
    ["a non-http URL", (d) => ((d.artifacts[3] as any).url = "ftp://x/runc"), "must be an https:// or http:// URL"],
    ["another schema", (d) => ((d as any).schema = 2), "schema must be 1 (got 2)"],
  ];
  for (const [what, change, message] of cases) {
    it(`is refused for ${what}`, () => {
      const data = clone();
      change(data);
      const e = userErrorFrom(() => parseManifest(data, "m.json"));
      expect(e.message).toContain(message);
      expect(e.exitCode).toBe(2);
    });
  }

  it("is refused when missing or not JSON", () => {
    expect(userErrorFrom(() => loadManifest({ file: "/nonexistent/m.json" })).message).toBe("manifest /nonexistent/m.json: file not found");
    expect(userErrorFrom(() => loadManifest({ file: write("{ nope") })).message).toMatch(/is not valid JSON/);
  });
});

describe("mirrors", () => {
  it("keeps the upstream path under the mirror, with or without a path prefix", () => {
    expect(applyMirror("https://dl.k8s.io/v1.36.0/kubernetes-server-linux-amd64.tar.gz", mirrorFrom("http://127.0.0.1:8080/", {}))).toBe(
      "http://127.0.0.1:8080/v1.36.0/kubernetes-server-linux-amd64.tar.gz",
    );
    expect(
      applyMirror(
        "https://github.com/a/b/releases/download/v1/x.tgz",
        mirrorFrom(undefined, { ROOTLESS_K8S_MIRROR: "https://m.corp/remote/" }),
      ),
    ).toBe("https://m.corp/remote/a/b/releases/download/v1/x.tgz");
    expect(mirrorFrom("https://flag.example", { ROOTLESS_K8S_MIRROR: "https://env.example" })).toBe("https://flag.example");
    expect(mirrorFrom(undefined, {})).toBeNull();
  });

  it("refuses a mirror that is not an http(s) URL, or carries credentials", () => {
    expect(userErrorFrom(() => mirrorFrom("ftp://m", {})).message).toContain("--mirror must be an http:// or https:// URL");
    expect(userErrorFrom(() => mirrorFrom(undefined, { ROOTLESS_K8S_MIRROR: "https://u:p@m" })).message).toContain(
      "ROOTLESS_K8S_MIRROR must be",
    );
  });
});

describe("hostile manifests (issue 16, defect 8)", () => {
  const k8s = (m: ReturnType<typeof clone>) =>
    m.artifacts[0] as {
      binaries: { name: string; path: string }[];
      checksums: Record<string, Record<string, string>>;
      notes?: string;
      url: string;
    };

  it("refuses two binaries on one archive member, also when spelled differently", () => {
    const m = clone();
    k8s(m).binaries[1]!.path = "./kubernetes//server/bin/kubelet";
    const e = userErrorFrom(() => parseManifest(m, "x.json"));
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe(
      'manifest x.json: artifact "kubernetes-server" binaries[1] path names the archive member "kubernetes/server/bin/kubelet" that binaries[0] already installs; each binary needs its own member',
    );
  });

  it("refuses an empty member path", () => {
    for (const path of ["", "./", "."]) {
      const m = clone();
      k8s(m).binaries[0]!.path = path;
      const e = userErrorFrom(() => parseManifest(m, "x.json"));
      expect(e.message).toBe(
        'manifest x.json: artifact "kubernetes-server" binaries[0] path is empty; name the file inside the archive, e.g. bin/etcd',
      );
    }
  });

  it("escapes terminal control characters in free text, and refuses them in URLs and paths", () => {
    const m = clone();
    k8s(m).notes = "ok\u001b]0;owned\u0007\u001b[2J";
    k8s(m).checksums.amd64!.source = "src\r\u001b[1Afake";
    const parsed = parseManifest(m, "x.json");
    expect(parsed.artifacts[0]?.notes).toBe("ok\\x1b]0;owned\\x07\\x1b[2J");
    expect(parsed.artifacts[0]?.checksums.amd64?.source).toBe("src\\r\\x1b[1Afake");
    const u = clone();
    k8s(u).url = "https://dl.k8s.io/\u001b[2J/x";
    expect(userErrorFrom(() => parseManifest(u, "x.json")).message).toBe(
      'manifest x.json: artifact "kubernetes-server" url holds a control character',
    );
    const p = clone();
    k8s(p).binaries[0]!.path = "kubernetes/server/bin/kubelet\n";
    expect(userErrorFrom(() => parseManifest(p, "x.json")).message).toBe(
      'manifest x.json: artifact "kubernetes-server" binaries[0] path holds a control character',
    );
  });
});

describe("add-on images in a manifest", () => {
  const DIGEST = `sha256:${"0f".repeat(32)}`;
  const withImages = (images: unknown) => ({ ...clone(), images });

  it("the built-in one pins every add-on image by digest, saying where each digest comes from", () => {
    const hex = (d: string) => `sha256:${d}`;
    expect(loadManifest().images).toEqual([
      expect.objectContaining({
        id: "coredns",
        name: "registry.k8s.io/coredns/coredns:v1.14.2",
        digest: hex("e7e6440cfd1e919280958f5b5a6ab2b184d385bba774c12ad2a9e1e4183f90d9"),
        source: expect.stringMatching(/cilium-cli\/defaults\/defaults\.go.*multi-arch index/),
      }),
      expect.objectContaining({
        id: "local-path-provisioner",
        name: "docker.io/rancher/local-path-provisioner:v0.0.30",
        digest: hex("9b914881170048f80ae9302f36e5b99b4a6b18af73a38adc1c66d12f65d360be"),
        source: expect.stringMatching(/openkubes\/ok-cluster /),
      }),
      expect.objectContaining({
        id: "local-path-helper",
        name: "docker.io/rancher/mirrored-library-busybox:1.36.1",
        digest: hex("8a45424ddf949bbe9bb3231b05f9032a45da5cd036eb4867b511b00734756d6f"),
        source: expect.stringMatching(/k3s-io\/k3s tests\/e2e\/embeddedmirror/),
      }),
      expect.objectContaining({
        id: "metrics-server",
        name: "registry.k8s.io/metrics-server/metrics-server:v0.8.0",
        digest: hex("89258156d0e9af60403eafd44da9676fd66f600c7934d468ccc17e42b199aee2"),
        source: expect.stringMatching(/^kubernetes\/k8s\.io registry\.k8s\.io\/images\/k8s-staging-metrics-server\/images\.yaml@/),
      }),
    ]);
  });

  it("takes a pinned image", () => {
    const m = parseManifest(
      withImages([{ id: "coredns", name: "registry.k8s.io/coredns/coredns:v1.14.3", digest: DIGEST, source: "built here" }]),
      "t",
    );
    expect(m.images?.[0]?.digest).toBe(DIGEST);
  });

  it.each([
    [
      { id: "dns-cache", name: "registry.k8s.io/x:1", digest: null, source: "s" },
      /id must be one of coredns, local-path-provisioner, local-path-helper, metrics-server/,
    ],
    [{ id: "coredns", name: "coredns/coredns", digest: null, source: "s" }, /full image name with a tag/],
    [{ id: "coredns", name: "registry.k8s.io/coredns/coredns:v1@" + DIGEST, digest: null, source: "s" }, /full image name with a tag/],
    [{ id: "coredns", name: "registry.k8s.io/coredns/coredns:v1", digest: "sha256:abc", source: "s" }, /digest must be sha256:/],
    [{ id: "coredns", name: "registry.k8s.io/coredns/coredns:v1", digest: null, source: " " }, /source is empty/],
  ])("refuses %j in one line", (image, msg) => {
    const e = userErrorFrom(() => parseManifest(withImages([image]), "t.json"));
    expect(e.exitCode).toBe(2);
    expect(e.message).toMatch(msg);
    expect(e.message).not.toContain("\n");
  });

  it("refuses two images with one id", () => {
    const i = { id: "coredns", name: "registry.k8s.io/coredns/coredns:v1", digest: null, source: "s" };
    expect(userErrorFrom(() => parseManifest(withImages([i, i]), "t.json")).message).toMatch(/two images with id "coredns"/);
  });
});
