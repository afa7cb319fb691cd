// The bundled CLI as a child process: `components`, `cache` and `bundle`, downloading from a
// loopback mirror with a --manifest of served files, Ctrl-C mid-download then a resumed run,
// the lock between two runs, and one-line errors with documented exit codes.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI_BUNDLE, runCli } from "../../helpers/cli";
import { sha256 } from "../../helpers/hash";
import { startServer, type TestServer } from "../../helpers/http-server";
import { tempDir } from "../../helpers/temp";
import { makeTestCa } from "../../helpers/tls";
import { randomBody, testArtifact } from "./helpers/artifacts";
import { tarGz } from "../../helpers/tar.mjs";
import { dockerSaveArchive, ociArchive, ociImage } from "../../helpers/image-archives";

const NO_TRACE = /\bat .*\.(js|ts|cjs):\d+/;

describe("rootless-k8s components", () => {
  it("lists the built-in set with versions, checksum sources and binaries", async () => {
    const r = await runCli(["components", "--arch", "arm64"], { env: { XDG_CACHE_HOME: tempDir() } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("for arm64, runtime containerd, network builtin");
    expect(r.stdout).toContain("kubernetes 1.36.0  kubernetes-server-linux-arm64.tar.gz (size unknown)");
    expect(r.stdout).toContain("verified by: sha512 pinned from kubernetes/kubernetes CHANGELOG/CHANGELOG-1.36.md@008b3652");
    expect(r.stdout).toContain("rootlesskit 3.0.2  rootlesskit-aarch64.tar.gz");
    expect(r.stdout).toContain("installs: cni/bandwidth cni/bridge");
    expect(r.stdout).not.toContain("slirp4netns");
  });

  it("gives the same as JSON, also as `versions`", async () => {
    const r = await runCli(["versions", "--json", "--runtime", "docker", "--network", "slirp4netns", "--arch", "amd64"], {
      env: { XDG_CACHE_HOME: tempDir() },
    });
    expect(r.code).toBe(0);
    const data = JSON.parse(r.stdout);
    expect(data.versionSet.versions.kubernetes).toBe("1.36.0");
    expect(data.components.map((c: { id: string }) => c.id)).toEqual([
      "kubernetes-server",
      "etcd",
      "cni-plugins",
      "crictl",
      "rootlesskit",
      "slirp4netns",
      "cri-dockerd",
    ]);
    expect(data.components[0]).toMatchObject({ size: null, cached: false, checksum: { algorithm: "sha512" } });
  });

  it("refuses a --manifest without checksums in one line (exit 2)", async () => {
    const file = join(tempDir(), "m.json");
    writeFileSync(
      file,
      JSON.stringify({
        schema: 1,
        name: "x",
        artifacts: [
          {
            id: "a",
            component: "a",
            version: "1",
            url: "https://x/a",
            arch: { amd64: "amd64" },
            format: "binary",
            binaries: [{ name: "a" }],
          },
        ],
      }),
    );
    const r = await runCli(["components", "--manifest", file]);
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe(
      `error: manifest ${file}: artifact "a" checksums.amd64 is missing; every artifact needs a pinned sha256 or sha512 for each arch it lists`,
    );
    expect(r.stderr).toMatch(/^fix: /m);
    expect(r.stderr).not.toMatch(NO_TRACE);
  });
});

describe("rootless-k8s cache and bundle against a loopback mirror", () => {
  let server: TestServer;
  let home: string;
  let manifestFile: string;
  const crictlTar = tarGz([{ path: "crictl", content: randomBody(200_000, 41) }]);
  const big = randomBody(3_000_000, 42);

  beforeEach(async () => {
    server = await startServer();
    server.serve("/kubernetes-sigs/cri-tools/releases/download/v1.36.0/crictl-v1.36.0-linux-amd64.tar.gz", crictlTar);
    server.serve("/opencontainers/runc/releases/download/v1.4.3/runc.amd64", big);
    home = tempDir("rk8s-cli-");
    manifestFile = join(home, "manifest.json");
    writeFileSync(
      manifestFile,
      JSON.stringify({
        schema: 1,
        name: "loopback set",
        artifacts: [
          testArtifact({
            id: "crictl",
            version: "1.36.0",
            path: "/kubernetes-sigs/cri-tools/releases/download/v{version}/crictl-v{version}-linux-{arch}.tar.gz",
            body: crictlTar,
            format: "tar.gz",
            binaries: [{ name: "crictl", path: "crictl" }],
          }),
          testArtifact({ id: "runc", version: "1.4.3", path: "/opencontainers/runc/releases/download/v{version}/runc.{arch}", body: big }),
        ],
      }),
    );
  });
  afterEach(async () => {
    await server.close();
  });

  const env = () => ({ XDG_CACHE_HOME: join(home, "cache"), HOME: home, CI: "true" });
  const blobDir = () => join(home, "cache", "rootless-k8s", "blobs", "sha256");
  const partDir = () => join(home, "cache", "rootless-k8s", "partial");

  it("fills the cache with plain lines off a terminal, then needs zero network bytes", async () => {
    const args = ["cache", "fetch", "--arch", "amd64", "--manifest", manifestFile, "--mirror", server.url];
    const r = await runCli(args, { env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("2 files verified");
    expect(r.stderr).toMatch(/^crictl 1\.36\.0 for amd64: \d+(\.\d)? KiB downloaded, sha256 matches the pin from test fixture$/m);
    expect(r.stderr).toMatch(/^runc 1\.4\.3 for amd64: 2\.9 MiB downloaded/m);
    expect(readdirSync(blobDir()).sort()).toEqual([sha256(crictlTar), sha256(big)].sort());

    const sent = server.bytesSent();
    const again = await runCli(args, { env: env() });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("(0 downloaded, 2 already cached)");
    expect(server.bytesSent()).toBe(sent);

    const list = await runCli(["cache", "list", "--manifest", manifestFile], { env: env() });
    expect(list.stdout).toContain("runc 1.4.3 amd64 (runc)");
    const clean = await runCli(["cache", "clean"], { env: env() });
    expect(clean.stdout).toMatch(/^removed 2 files \(3\.1 MiB\) from /);
    expect(existsSync(blobDir())).toBe(false);
  });

  it("writes a bundle, and fills another cache from it with the mirror gone", async () => {
    const out = join(home, "offline.tar");
    const b = await runCli(["bundle", "--arch", "amd64", "-o", out, "--manifest", manifestFile, "--mirror", server.url], { env: env() });
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toContain(`wrote ${out}`);
    await server.close();
    const offline = { ...env(), XDG_CACHE_HOME: join(home, "offline-cache") };
    const r = await runCli(["cache", "fetch", "--arch", "amd64", "--manifest", manifestFile, "--bundle", out], { env: offline });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("runc 1.4.3 for amd64: 2.9 MiB from the bundle");
    expect(readdirSync(join(home, "offline-cache", "rootless-k8s", "blobs", "sha256")).sort()).toEqual(
      [sha256(crictlTar), sha256(big)].sort(),
    );
  });

  it("shows one progress line with bytes, speed and ETA on a terminal", async () => {
    server.fault("/opencontainers/runc/releases/download/v1.4.3/runc.amd64", { kind: "rate", bytesPerSec: 3_000_000 });
    const cmd = [process.execPath, CLI_BUNDLE, "cache", "fetch", "--arch", "amd64", "--manifest", manifestFile, "--mirror", server.url]
      .map((a) => `'${a}'`)
      .join(" ");
    const { CI: _ci, ...noCi } = { ...process.env, ...env() };
    // `script` gives the CLI a pseudo-terminal; stty sets a width, as a real terminal has.
    const tty = spawn("script", ["-qfec", `stty cols 120 rows 40; ${cmd}`, "/dev/null"], {
      env: { ...noCi, TERM: "xterm", NO_COLOR: "1" },
    });
    let out = "";
    tty.stdout.on("data", (d) => (out += d));
    expect(await new Promise((r) => tty.on("exit", r))).toBe(0);
    const frames = out.split("\r").join("\n");
    expect(frames).toMatch(/Downloading [01]\/2 · [\d.]+ [KM]iB of 3\.\d MiB · [\d.]+ [KM]iB\/s · ETA \d+s/);
    expect(frames).toContain("2 component files verified (3.1 MiB downloaded)");
    expect(frames).not.toMatch(/^crictl 1\.36\.0 for amd64: /m); // no plain lines on a terminal
  });

  it("refuses a bundle path in a missing folder before downloading anything (exit 2)", async () => {
    const r = await runCli(["bundle", "-o", join(home, "missing", "b.tar"), "--manifest", manifestFile, "--mirror", server.url], {
      env: env(),
    });
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe(
      `error: -o ${join(home, "missing", "b.tar")}: the folder ${join(home, "missing")} does not exist or is not writable`,
    );
    expect(server.requests).toHaveLength(0);
  });

  it("bundle --image: carries a good archive, and refuses a bad one before downloading anything (exit 2)", async () => {
    const good = join(home, "busybox.tar");
    writeFileSync(good, dockerSaveArchive([{ repoTags: ["busybox:1.36.1"] }]).tar);
    const unnamed = join(home, "unnamed.tar");
    writeFileSync(unnamed, dockerSaveArchive([{ repoTags: [] }]).tar);
    const refused = await runCli(
      [
        "bundle",
        "--arch",
        "amd64",
        "-o",
        join(home, "b.tar"),
        "--image",
        good,
        "--image",
        unnamed,
        "--manifest",
        manifestFile,
        "--mirror",
        server.url,
      ],
      { env: env() },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr.split("\n")[0]).toMatch(new RegExp(`^error: ${unnamed}: `));
    expect(server.requests).toHaveLength(0);
    expect(existsSync(join(home, "b.tar"))).toBe(false);
    const out = join(home, "with-images.tar");
    const b = await runCli(["bundle", "--arch", "amd64", "-o", out, "--image", good, "--manifest", manifestFile, "--mirror", server.url], {
      env: env(),
    });
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toContain("and 1 image archive (docker.io/library/busybox:1.36.1)");
    expect(execFileSync("tar", ["-tf", out], { encoding: "utf8" })).toContain("images/1-busybox.tar");
  });

  it("bundle --image: says which add-on image it lacks, and which it holds under another digest than the pinned one", async () => {
    const coredns = "registry.k8s.io/coredns/coredns:v1.14.2";
    const pinned = ociImage("amd64", "the pinned coredns");
    const other = ociImage("amd64", "coredns built elsewhere");
    const set = JSON.parse(readFileSync(manifestFile, "utf8"));
    set.images = [
      { id: "coredns", name: coredns, digest: pinned.manifest.digest, source: "test" },
      { id: "metrics-server", name: "registry.k8s.io/metrics-server/metrics-server:v0.8.0", digest: null, source: "test" },
    ];
    writeFileSync(manifestFile, JSON.stringify(set));
    const archive = (name: string, image: typeof pinned) => {
      const f = join(home, name);
      writeFileSync(f, ociArchive([{ image, annotations: { "io.containerd.image.name": coredns } }]));
      return f;
    };
    const bundle = (img: string) =>
      runCli(["bundle", "--arch", "amd64", "-o", join(home, "b.tar"), "--image", img, "--manifest", manifestFile, "--mirror", server.url], {
        env: env(),
      });
    const wrong = await bundle(archive("coredns-other.tar", other));
    expect(wrong.code, wrong.stderr).toBe(0);
    const notes = wrong.stderr.split("\n").filter((l) => l.startsWith("note:"));
    expect(notes).toHaveLength(2);
    expect(notes[0]).toContain(
      `coredns-other.tar holds ${coredns} as ${other.manifest.digest.slice(0, 19)}…, but the version set pins ${pinned.manifest.digest.slice(0, 19)}… (the dns add-on's image)`,
    );
    expect(notes[0]).toContain(
      `skopeo copy --multi-arch all docker://${coredns}@${pinned.manifest.digest} oci-archive:coredns.tar:${coredns}`,
    );
    expect(notes[0]).toContain("or install with --no-dns");
    expect(notes[1]).toContain("the bundle carries no registry.k8s.io/metrics-server/metrics-server:v0.8.0 (the metrics add-on's image)");
    // The pinned image itself: only the image the bundle lacks is named.
    const right = await bundle(archive("coredns-pinned.tar", pinned));
    expect(right.code, right.stderr).toBe(0);
    expect(right.stderr.split("\n").filter((l) => l.startsWith("note:"))).toEqual([
      expect.stringContaining("carries no registry.k8s.io/metrics-server"),
    ]);
  });

  it("names the URL and version on a 404 (exit 5), with a fix and no stack trace", async () => {
    const r = await runCli(["cache", "fetch", "--arch", "amd64", "--manifest", manifestFile, "--mirror", `${server.url}/nothing-here`], {
      env: env(),
    });
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(
      /^error: not found \(HTTP 404\): http:\/\/127\.0\.0\.1:\d+\/nothing-here\/\S+ \((crictl 1\.36\.0|runc 1\.4\.3) for amd64\)$/m,
    );
    expect(r.stderr).toMatch(/^fix: /m);
    expect(r.stderr).not.toMatch(NO_TRACE);
  });

  it("stops on Ctrl-C mid-download (exit 130) and the next run resumes with a Range request", async () => {
    server.fault("/opencontainers/runc/releases/download/v1.4.3/runc.amd64", { kind: "rate", bytesPerSec: 1_000_000 });
    const args = ["cache", "fetch", "--arch", "amd64", "--manifest", manifestFile, "--mirror", server.url, "--concurrency", "1"];
    const child = spawn(process.execPath, [CLI_BUNDLE, ...args], {
      env: { ...process.env, ...env(), NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    const part = () => readdirSync(partDir()).filter((n) => n.endsWith(".part"))[0];
    for (let i = 0; i < 200 && !(existsSync(partDir()) && part() && statSync(join(partDir(), part()!)).size > 300_000); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    child.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(stderr).toMatch(
      /^error: interrupted while downloading runc 1\.4\.3 for amd64 \(\d+(\.\d)? [KM]iB kept; re-running resumes it\)$/m,
    );
    const kept = statSync(join(partDir(), part()!)).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(big.length);
    expect(existsSync(join(home, "cache", "rootless-k8s", "lock"))).toBe(false);

    server.clearFaults();
    const r = await runCli(args, { env: env() });
    expect(r.code, r.stderr).toBe(0);
    const last = server.requests.filter((q) => q.path.endsWith("runc.amd64")).at(-1);
    expect(last?.range).toBe(`bytes=${kept}-`);
    expect(last?.status).toBe(206);
    expect(r.stderr).toContain(`resumed at byte ${kept}`);
  });

  it("refuses to clean the cache while a download holds it (exit 6), and takes over after the holder is killed", async () => {
    server.fault("/opencontainers/runc/releases/download/v1.4.3/runc.amd64", { kind: "rate", bytesPerSec: 200_000 });
    const child = spawn(
      process.execPath,
      [CLI_BUNDLE, "cache", "fetch", "--arch", "amd64", "--manifest", manifestFile, "--mirror", server.url],
      {
        env: { ...process.env, ...env() },
        stdio: "ignore",
      },
    );
    const exited = new Promise((r) => child.on("exit", r));
    const lockDir = join(home, "cache", "rootless-k8s", "lock");
    for (let i = 0; i < 200 && !existsSync(join(lockDir, "owner.json")); i++) await new Promise((r) => setTimeout(r, 25));
    const busy = await runCli(["cache", "clean"], { env: env() });
    expect(busy.code).toBe(6);
    expect(busy.stderr.split("\n")[0]).toMatch(
      new RegExp(`^error: a rootless-k8s download into this cache \\(pid ${child.pid} on .+\\) holds the lock ${lockDir}$`),
    );
    child.kill("SIGKILL");
    await exited;
    const clean = await runCli(["cache", "clean"], { env: env() });
    expect(clean.code, clean.stderr).toBe(0);
  });
});

describe("a private CA from NODE_EXTRA_CA_CERTS", () => {
  it("is trusted for an https mirror, and without it the TLS error says what to do", async () => {
    const ca = makeTestCa();
    const server = await startServer({ tls: ca });
    try {
      const body = randomBody(10_000, 51);
      server.serve("/opencontainers/runc/releases/download/v1.4.3/runc.amd64", body);
      const home = tempDir("rk8s-ca-cli-");
      const manifestFile = join(home, "m.json");
      writeFileSync(
        manifestFile,
        JSON.stringify({
          schema: 1,
          name: "tls",
          artifacts: [
            testArtifact({ id: "runc", version: "1.4.3", path: "/opencontainers/runc/releases/download/v{version}/runc.{arch}", body }),
          ],
        }),
      );
      const args = ["cache", "fetch", "--arch", "amd64", "--manifest", manifestFile, "--mirror", server.url];
      const untrusted = await runCli(args, { env: { XDG_CACHE_HOME: join(home, "a"), CI: "true" } });
      expect(untrusted.code).toBe(5);
      expect(untrusted.stderr).toMatch(
        /^error: could not download runc 1\.4\.3 for amd64: the TLS certificate of 127\.0\.0\.1:\d+ is not trusted/m,
      );
      expect(untrusted.stderr).toContain(
        "fix: if a proxy or mirror uses a private CA, pass it with --ca-file FILE (or NODE_EXTRA_CA_CERTS=FILE)",
      );
      const trusted = await runCli(args, { env: { XDG_CACHE_HOME: join(home, "b"), CI: "true", NODE_EXTRA_CA_CERTS: ca.caFile } });
      expect(trusted.code, trusted.stderr).toBe(0);
      const viaFlag = await runCli([...args, "--ca-file", ca.caFile], { env: { XDG_CACHE_HOME: join(home, "c"), CI: "true" } });
      expect(viaFlag.code, viaFlag.stderr).toBe(0);
    } finally {
      await server.close();
    }
  });
});
