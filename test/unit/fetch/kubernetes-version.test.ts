// Issue 32: `--kubernetes-version V` (a version, a minor or a channel) through the bundled CLI against
// a loopback mirror laid out like upstream: dl.k8s.io's release/ channel files and the six binaries
// one by one, each with the bare-hex .sha256 beside it, and the companions of the minor
// (assets/releases.json) at the built-in manifest's paths with their projects' checksum files
// (SHA256SUMS, .sha256sum, .sha256 lines). Files are random bytes; every checksum is read from the
// served checksum files, never from a pin. Bad input: one line, its exit code, nothing in the cache.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import builtin from "../../../assets/components.json";
import releases from "../../../assets/releases.json";
import { parseManifest } from "../../../cli/fetch/manifest";
import { runCli } from "../../helpers/cli";
import { sha256 } from "../../helpers/hash";
import { startServer, type TestServer } from "../../helpers/http-server";
import { tempDir } from "../../helpers/temp";
import { randomBody } from "./helpers/artifacts";

const NO_TRACE = /\bat .*\.(js|ts|cjs):\d+/;
const K8S = releases.kubernetes.binaries;
type Minor = keyof typeof releases.minors;

const expand = (t: string, version: string, arch: string) => t.replaceAll("{version}", version).replaceAll("{arch}", arch);
const pathOf = (url: string) => new URL(url).pathname;
const nameOf = (url: string) => pathOf(url).split("/").at(-1) as string;

/** Serves Kubernetes `version` and the companions of its minor for amd64; returns each file's sha256 by URL path. */
function serveRelease(server: TestServer, version: string, opts: { skipSide?: string[]; tamper?: string } = {}): Map<string, string> {
  const sums = new Map<string, string>();
  const minor = version.split(".").slice(0, 2).join(".") as Minor;
  let seed = 1;
  for (const name of K8S) {
    const url = expand(releases.kubernetes.url.replace("{name}", name), version, "amd64");
    const body = randomBody(2000 + seed, seed++);
    server.serve(pathOf(url), name === opts.tamper ? Buffer.concat([body, Buffer.from("x")]) : body);
    server.serve(`${pathOf(url)}.sha256`, `${sha256(body)}\n`);
    sums.set(pathOf(url), sha256(body));
  }
  for (const [id, c] of Object.entries(releases.minors[minor].companions) as [string, { version?: string }][]) {
    const a = builtin.artifacts.find((x) => x.id === id);
    if (!a || !c.version) continue;
    const token = (a.arch as Record<string, string>).amd64 as string;
    const url = expand(a.url, c.version, token);
    const body = randomBody(3000 + seed, seed++);
    server.serve(pathOf(url), body);
    sums.set(pathOf(url), sha256(body));
    const side = (a.sideFiles ?? []).find((s) => s.algorithm === "sha256");
    if (side && !opts.skipSide?.includes(id)) {
      // The project's own format: "<hex>  <file>" lines (two other files' lines around it).
      server.serve(
        pathOf(expand(side.url, c.version, token)),
        `${"0".repeat(64)}  other-file.tar.gz\n${sha256(body)}  ${nameOf(url)}\n${"1".repeat(64)}  third\n`,
      );
    }
  }
  return sums;
}

describe("--kubernetes-version against a loopback mirror in upstream's layout", () => {
  let server: TestServer;
  let home: string;
  beforeEach(async () => {
    server = await startServer();
    home = tempDir("rk8s-kv-");
    server.serve("/release/stable-1.36.txt", "v1.36.3\n");
    server.serve("/release/stable-1.37.txt", "v1.37.2\n");
    server.serve("/release/stable.txt", "v1.37.2\n");
    server.serve("/release/latest.txt", "v1.38.0-alpha.1\n");
  });
  afterEach(async () => {
    await server.close();
  });
  const env = () => ({ XDG_CACHE_HOME: join(home, "cache"), HOME: home, CI: "true" });
  const components = (...args: string[]) => runCli(["components", "--arch", "amd64", "--mirror", server.url, ...args], { env: env() });

  it("resolves a minor through stable-1.36.txt: the six binaries one by one, each checksum from upstream's file", async () => {
    const sums = serveRelease(server, "1.36.3");
    const r = await components("--kubernetes-version", "1.36", "--json");
    expect(r.code, r.stderr).toBe(0);
    const data = JSON.parse(r.stdout);
    expect(data.versionSet.versions).toMatchObject({ kubernetes: "1.36.3", etcd: "3.6.16", containerd: "2.3.7", rootlesskit: "3.3.0" });
    expect(data.versionSet.id).toMatch(/^1\.36\.3-[0-9a-f]{10}$/);
    expect(data.manifest.origin).toBe("--kubernetes-version (stable-1.36.txt names v1.36.3)");
    const k8s = data.components.filter((c: { component: string }) => c.component === "kubernetes");
    expect(k8s.map((c: { id: string }) => c.id)).toEqual(K8S);
    for (const c of data.components) {
      expect(c.trust, c.id).toBe("upstream");
      expect(c.checksum.value, c.id).toBe(sums.get(pathOf(c.url)));
      expect(c.checksum.source, c.id).toMatch(/^upstream checksum file https:\/\//);
    }
    expect(k8s[0]).toMatchObject({
      url: "https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubelet",
      checksum: { source: "upstream checksum file https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubelet.sha256" },
    });
    expect(server.requests.some((q) => q.path === "/release/stable-1.36.txt")).toBe(true);
    // The add-ons' images of the minor, by tag (the registry's word), as the table names them.
    expect(data.images.map((i: { name: string; digest: string | null }) => [i.name, i.digest])).toEqual(
      Object.values(releases.minors["1.36"].images).map((i) => [i.name, null]),
    );
    // Nothing was downloaded but the channel and checksum files, and the companions' tags.
    expect(server.requests.filter((q) => !/\.txt$|\.sha256$|\.sha256sum$|SHA256SUMS$|\/git\/matching-refs\/tags\//.test(q.path))).toEqual(
      [],
    );
  });

  it("shows who vouches for each file in words, and an exact version needs no channel file", async () => {
    serveRelease(server, "1.37.2");
    const r = await components("--kubernetes-version", "v1.37.2");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("kubernetes 1.37.2  kube-apiserver");
    expect(r.stdout).toContain(
      "verified by: sha256 from the upstream checksum file https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kube-apiserver.sha256",
    );
    expect(server.requests.some((q) => q.path.endsWith(".txt"))).toBe(false);
    // CRI-O has no 1.37 here: the set says so instead of carrying one.
    const crio = await components("--kubernetes-version", "1.37.2", "--runtime", "crio");
    expect(crio.stdout).toContain("cri-o: not in this set: CRI-O's minor follows Kubernetes's");
  });

  it("downloads and verifies the resolved set into the cache, each file against upstream's checksum file", async () => {
    const sums = serveRelease(server, "1.36.3");
    const r = await runCli(["cache", "fetch", "--arch", "amd64", "--kubernetes-version", "1.36", "--mirror", server.url], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("13 files verified");
    expect(r.stderr).toContain(
      "kubernetes (kubelet) 1.36.3 for amd64: 2.0 KiB downloaded, sha256 matches the upstream checksum file https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubelet.sha256",
    );
    const blobs = readdirSync(join(home, "cache", "rootless-k8s", "blobs", "sha256")).sort();
    expect(blobs).toEqual(expect.arrayContaining([sums.get("/release/v1.36.3/bin/linux/amd64/kube-apiserver")]));
    expect(blobs).toHaveLength(13);
  });

  it("verifies the one companion upstream publishes no checksum file for against this binary's pin", async () => {
    serveRelease(server, "1.36.3");
    const r = await runCli(
      ["bundle", "--arch", "amd64", "-o", join(home, "b.tar"), "--kubernetes-version", "1.36", "--mirror", server.url],
      {
        env: env(),
      },
    );
    // cri-dockerd served here is random bytes: the pin from kubespray's checksums refuses it.
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(/^error: checksum mismatch for cri-dockerd 0\.3\.26 for amd64: expected sha256 87f31c96/m);
  });

  it("keeps who vouched for a checksum when a bundle's manifest is read back", () => {
    const m = parseManifest(
      {
        schema: 1,
        name: "b",
        artifacts: [
          {
            id: "kubelet",
            component: "kubernetes",
            version: "1.36.3",
            url: "https://dl.k8s.io/release/v{version}/bin/linux/{arch}/kubelet",
            arch: { amd64: "amd64" },
            format: "binary",
            binaries: [{ name: "kubelet" }],
            checksums: { amd64: { algorithm: "sha256", value: "a".repeat(64), source: "upstream checksum file x", trust: "upstream" } },
          },
        ],
      },
      "bundle b.tar",
    );
    expect(m.artifacts[0]?.checksums.amd64?.trust).toBe("upstream");
    expect(() =>
      parseManifest(
        { ...m, artifacts: [{ ...m.artifacts[0], checksums: { amd64: { ...m.artifacts[0]?.checksums.amd64, trust: "maybe" } } }] },
        "x",
      ),
    ).toThrow(/trust/);
  });

  it("refuses a file that differs from upstream's checksum file (exit 4), leaving nothing in the cache", async () => {
    serveRelease(server, "1.36.3", { tamper: "kube-scheduler" });
    const r = await runCli(
      ["bundle", "--arch", "amd64", "-o", join(home, "b.tar"), "--kubernetes-version", "1.36", "--mirror", server.url],
      {
        env: env(),
      },
    );
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(/^error: .*kube-scheduler.*1\.36\.3/m);
    expect(r.stderr).not.toMatch(NO_TRACE);
    expect(existsSync(join(home, "b.tar"))).toBe(false);
    const blobs = join(home, "cache", "rootless-k8s", "blobs", "sha256");
    const bad = existsSync(blobs) ? readdirSync(blobs).filter((f) => !/^[0-9a-f]{64}$/.test(f)) : [];
    expect(bad).toEqual([]);
  });

  describe("each companion's newest patch, from its repository's tags (cli/fetch/tags.ts)", () => {
    /** GitHub's "List matching references" answer (docs.github.com/rest/git/refs) for `names`. */
    const refs = (repo: string, names: string[]) =>
      JSON.stringify(
        names.map((n) => ({
          ref: `refs/tags/${n}`,
          node_id: "MDM6UmVm",
          url: `https://api.github.com/repos/${repo}/git/refs/tags/${n}`,
          object: { type: "commit", sha: "aa218f56b14c9653891f9e74264a383fa43fefbd", url: "" },
        })),
      );
    const containerd = builtin.artifacts.find((a) => a.id === "containerd")!;
    const TAGS = "/repos/containerd/containerd/git/matching-refs/tags/v2.3.";
    /** Serves containerd `version` and, unless `noSums`, its .sha256sum line; returns its sha256. */
    const serveContainerd = (version: string, noSums = false) => {
      const url = expand(containerd.url, version, "amd64");
      const body = randomBody(4321, 99);
      server.serve(pathOf(url), body);
      const side = containerd.sideFiles!.find((s) => s.algorithm === "sha256")!;
      if (!noSums) server.serve(pathOf(expand(side.url, version, "amd64")), `${sha256(body)}  ${nameOf(url)}\n`);
      return sha256(body);
    };

    it("a newer patch among the tags, with its checksum file: that patch, verified by its own file, and the plan says so", async () => {
      serveRelease(server, "1.36.3");
      // Release candidates and other minors are not patches of 2.3; v2.3.10 sorts after v2.3.9 as a number.
      server.serve(TAGS, refs("containerd/containerd", ["v2.3.0", "v2.3.7", "v2.3.9", "v2.3.10", "v2.3.11-rc.0", "v2.30.0"]));
      const sum = serveContainerd("2.3.10");
      const r = await components("--kubernetes-version", "1.36", "--json");
      expect(r.code, r.stderr).toBe(0);
      const data = JSON.parse(r.stdout);
      expect(data.versionSet.versions).toMatchObject({ containerd: "2.3.10", etcd: "3.6.16", runc: "1.5.3" });
      const c = data.components.find((x: { id: string }) => x.id === "containerd");
      expect(c.checksum).toMatchObject({ value: sum, trust: "upstream" });
      expect(c.checksum.source).toBe(
        "upstream checksum file https://github.com/containerd/containerd/releases/download/v2.3.10/containerd-static-2.3.10-linux-amd64.tar.gz.sha256sum",
      );
      expect(data.manifest.choices).toContainEqual(
        expect.stringMatching(
          /^containerd 2\.3\.10: .*; 2\.3\.10 is the newest 2\.3 patch among containerd\/containerd's tags \(the table names 2\.3\.7\); verified by containerd-static-2\.3\.10-linux-amd64\.tar\.gz\.sha256sum/,
        ),
      );
      expect(server.requests.some((q) => q.path === TAGS)).toBe(true);
    });

    it("tags no newer than the table's (or none of its minor): the table's version, never an older one", async () => {
      serveRelease(server, "1.36.3");
      server.serve(TAGS, refs("containerd/containerd", ["v2.3.0", "v2.3.5", "v2.2.9"]));
      server.serve("/repos/etcd-io/etcd/git/matching-refs/tags/v3.6.", "[]");
      const r = await components("--kubernetes-version", "1.36", "--json");
      expect(r.code, r.stderr).toBe(0);
      const data = JSON.parse(r.stdout);
      expect(data.versionSet.versions).toMatchObject({ containerd: "2.3.7", etcd: "3.6.16" });
      expect(data.manifest.choices).toContainEqual(
        expect.stringMatching(/^containerd 2\.3\.7: .*; no newer 2\.3 patch among containerd\/containerd's 2 2\.3 tags;/),
      );
      expect(data.manifest.choices).toContainEqual(
        expect.stringMatching(/^etcd 3\.6\.16: .*; the table's 3\.6\.16: etcd-io\/etcd has no 3\.6\.Z tag;/),
      );
    });

    it("a newer tag without its checksum file yet: the table's version, and why", async () => {
      serveRelease(server, "1.36.3");
      server.serve(TAGS, refs("containerd/containerd", ["v2.3.7", "v2.3.8"]));
      serveContainerd("2.3.8", true);
      const r = await components("--kubernetes-version", "1.36", "--json");
      expect(r.code, r.stderr).toBe(0);
      const data = JSON.parse(r.stdout);
      expect(data.versionSet.versions.containerd).toBe("2.3.7");
      expect(data.manifest.choices).toContainEqual(
        expect.stringMatching(
          /^containerd 2\.3\.7: .*; the table's 2\.3\.7: 2\.3\.8, the newest tag, has no checksum file yet \(http:.*sha256sum: HTTP 404\)/,
        ),
      );
    });

    it.each([
      ["not served (a mirror without tags, GitHub's 404)", null, "HTTP 404"],
      ["GitHub's rate limit", 403, "HTTP 403"],
      ["not JSON", "<html>", "not JSON"],
    ])("tags that cannot be read, %s: the table's versions, exit 0, and the plan says why", async (_, answer, why) => {
      serveRelease(server, "1.36.3");
      if (answer === 403) {
        server.serve(TAGS, "[]");
        server.fault(TAGS, { kind: "status", status: 403 });
      } else if (typeof answer === "string") server.serve(TAGS, answer);
      const r = await components("--kubernetes-version", "1.36", "--json");
      expect(r.code, r.stderr).toBe(0);
      const data = JSON.parse(r.stdout);
      expect(data.versionSet.versions).toMatchObject({ containerd: "2.3.7", etcd: "3.6.16" });
      expect(data.manifest.choices).toContainEqual(
        expect.stringContaining(`the table's 2.3.7: its tags could not be read (${server.url}${TAGS}: ${why})`),
      );
    });
  });

  it("leaves out a companion whose checksum file is not published, and says why", async () => {
    serveRelease(server, "1.36.3", { skipSide: ["slirp4netns"] });
    const r = await components("--kubernetes-version", "1.36", "--network", "slirp4netns", "--json");
    expect(r.code, r.stderr).toBe(0);
    const data = JSON.parse(r.stdout);
    expect(data.versionSet.versions.slirp4netns).toBeUndefined();
    expect(data.manifest.unavailable.slirp4netns).toMatch(
      /^its checksum file http:\/\/127\.0\.0\.1:\d+\/.*SHA256SUMS is not published \(HTTP 404\)$/,
    );
  });

  it.each([
    [
      ["--kubernetes-version", "banana"],
      2,
      /^error: --kubernetes-version takes a Kubernetes version \(1\.37\.2\), a minor \(1\.37\) or a channel/,
    ],
    [
      ["--kubernetes-version", "1.99"],
      3,
      /^error: Kubernetes 1\.99 is outside the Kubernetes minors this rootless-k8s supports \(1\.36 to 1\.37\)$/,
    ],
    [["--kubernetes-version", "latest"], 3, /^error: the channel latest \(v1\.38\.0-alpha\.1\) is outside the Kubernetes minors/],
    [
      ["--kubernetes-version", "1.36.9"],
      2,
      /^error: Kubernetes 1\.36\.9 is not published \(.*kubelet\.sha256: HTTP 404\); stable-1\.36 is 1\.36\.3$/,
    ],
    [
      ["--kubernetes-version", "1.37", "--pinned"],
      3,
      /^error: --pinned: the set built into this rootless-k8s is Kubernetes 1\.36\.0, not 1\.37$/,
    ],
    [
      ["--kubernetes-version", "1.36", "--manifest", "x.json"],
      2,
      /^error: --kubernetes-version 1\.36 and --manifest both choose the version set$/,
    ],
  ])("refuses %j with one line and exit %i", async (args, code, line) => {
    serveRelease(server, "1.36.3");
    const r = await components(...(args as string[]));
    expect(r.code, r.stderr).toBe(code);
    expect(r.stderr.split("\n")[0]).toMatch(line);
    expect(r.stderr).toMatch(/^(fix|usage): /m);
    expect(r.stderr).not.toMatch(NO_TRACE);
    expect(existsSync(join(home, "cache", "rootless-k8s", "blobs"))).toBe(false);
  });

  it("refuses a channel file holding garbage (exit 4)", async () => {
    server.serve("/release/stable.txt", "<html><body>captive portal</body></html>\n");
    const r = await components("--kubernetes-version", "stable");
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr.split("\n")[0]).toMatch(
      /^error: the channel file http:\/\/127\.0\.0\.1:\d+\/release\/stable\.txt does not hold a Kubernetes version \(it starts "<html>/,
    );
  });

  it("names the network problem when the channel file cannot be read (exit 5)", async () => {
    const r = await runCli(["components", "--arch", "amd64", "--kubernetes-version", "1.36", "--mirror", "http://127.0.0.1:9"], {
      env: env(),
    });
    expect(r.code, r.stderr).toBe(5);
    expect(r.stderr.split("\n")[0]).toMatch(/^error: cannot read http:\/\/127\.0\.0\.1:9\/release\/stable-1\.36\.txt: /);
  });
});
