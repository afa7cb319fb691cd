// install --bundle's image step against a real containerd: Debian's containerd 1.6 (CI installs it,
// scripts/test-deps.sh) serving a socket in a temporary folder, its CRI plugin answering as it does
// for the kubelet. A bundle carrying two image archives (bundle --image) is extracted verified,
// loaded with the real ctr, and the CRI must list both names; an altered bundle loads nothing.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBundleImages } from "../../../cli/apply/images";
import { buildPlan } from "../../../cli/plan/index";
import type { Plan } from "../../../cli/plan/plan";
import { userErrorOf } from "../../helpers/errors";
import { dockerSaveArchive } from "../../helpers/image-archives";
import { bundleWithImages } from "../../helpers/bundles";
import { waitFor, which } from "../../helpers/process";
import { tempDir } from "../../helpers/temp";
import { baseFacts, upstreamVersions } from "../../unit/plan/facts-builder";

function skipReason(): string | null {
  if (process.getuid?.() !== 0) return "needs root to run containerd outside a user namespace";
  const missing = ["containerd", "ctr"].filter((t) => !which(t));
  return missing.length ? `missing ${missing.join(", ")} (apt-get install containerd)` : null;
}
const reason = skipReason();
if (reason) console.log(`bundle-images: skipped: ${reason}`);

describe.skipIf(reason !== null)("install --bundle loads the bundle's image archives into a real containerd", () => {
  const work = tempDir("rk8s-bundle-images-");
  const sock = join(work, "containerd.sock");
  let containerd: ChildProcess | null = null;
  let log = "";
  let plan: Plan;
  let bundle: string;
  const busybox = dockerSaveArchive([{ repoTags: ["busybox:1.36.1"], seed: "bb" }]).tar;
  const app = dockerSaveArchive([{ repoTags: ["example.org/team/app:v2"], seed: "app" }]).tar;

  beforeAll(async () => {
    const config = join(work, "config.toml");
    writeFileSync(config, `version = 2\nroot = "${join(work, "root")}"\nstate = "${join(work, "state")}"\n[grpc]\naddress = "${sock}"\n`);
    containerd = spawn(which("containerd"), ["--config", config], { stdio: ["ignore", "pipe", "pipe"] });
    containerd.stderr!.on("data", (d) => (log += d));
    await waitFor(() => existsSync(sock), 20_000, `containerd's socket (log: ${log.slice(-400)})`);
    const version = spawnSync("containerd", ["--version"], { encoding: "utf8" }).stdout.split(" ")[2]!.replace(/^v/, "");
    const built = buildPlan(baseFacts(), { runtimeBin: which("containerd"), runtimeBinVersion: version }, upstreamVersions());
    // The plan's runtime, at this containerd's socket; native snapshotter (no overlay assumptions here).
    plan = { ...built, runtime: { ...built.runtime, criSocket: sock, snapshotter: { ...built.runtime.snapshotter!, name: "native" } } };
    plan = { ...plan, paths: { ...plan.paths, cacheDir: join(work, "cache") } };

    // A bundle as `rootless-k8s bundle --image busybox.tar --image app.tar` writes it.
    bundle = (
      await bundleWithImages(work, [
        ["busybox.tar", busybox],
        ["app.tar", app],
      ])
    ).bundle;
  }, 60_000);

  afterAll(() => {
    containerd?.kill("SIGTERM");
  });

  const criNames = () =>
    spawnSync("ctr", ["--address", sock, "--namespace", "k8s.io", "images", "list", "--quiet"], { encoding: "utf8" })
      .stdout.trim()
      .split("\n");

  it("refuses an altered bundle (exit 4) and loads nothing from it", async () => {
    const data = readFileSync(bundle);
    const at = data.indexOf(app) + 700;
    data[at] = (data[at] ?? 0) ^ 0xff;
    const altered = join(work, "altered.tar");
    writeFileSync(altered, data);
    const e = await userErrorOf(loadBundleImages(plan, altered, { env: process.env }));
    expect(e.exitCode).toBe(4);
    expect(criNames()).not.toContain("example.org/team/app:v2");
    expect(criNames()).not.toContain("docker.io/library/busybox:1.36.1");
    expect(readdirSync(join(work, "cache"))).toEqual([]); // the extracted archives are gone
  });

  it("extracts each archive verified, loads it with ctr, and containerd's CRI lists every name", async () => {
    const loaded = await loadBundleImages(plan, bundle, { env: process.env });
    expect(loaded.map((i) => i.name)).toEqual(["docker.io/library/busybox:1.36.1", "example.org/team/app:v2"]);
    for (const i of loaded) expect(i.criId).toBe(i.id); // the CRI answered, with the config digest
    expect(criNames()).toEqual(expect.arrayContaining(["docker.io/library/busybox:1.36.1", "example.org/team/app:v2"]));
    // Also by the digest each name points at, as a pull would name them: a pod's
    // `image: NAME@sha256:...` finds them.
    const listing = spawnSync("ctr", ["--address", sock, "--namespace", "k8s.io", "images", "list"], { encoding: "utf8" }).stdout;
    for (const [name, repo] of [
      ["docker.io/library/busybox:1.36.1", "docker.io/library/busybox"],
      ["example.org/team/app:v2", "example.org/team/app"],
    ]) {
      const digest = listing
        .split("\n")
        .find((l) => l.startsWith(`${name} `))
        ?.split(/\s+/)[2];
      expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(criNames()).toContain(`${repo}@${digest}`);
    }
    expect(readdirSync(join(work, "cache"))).toEqual([]);
  });
});
