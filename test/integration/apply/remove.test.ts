// What uninstall may remove, and the removal of sub-UID-owned files from inside a user namespace:
// a real non-root user with real /etc/subuid ranges, real newuidmap, real files owned by sub-UIDs.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { idMapArgs, removeEmptyDirs, removeInUserNamespace, subIdRanges } from "../../../cli/apply/remove";
import type { OwnedRoots, Receipt } from "../../../cli/apply/receipt";
import { checkReceiptPaths, mayRemovePath, ownFolders } from "../../../cli/apply/trust";
import { ExitCode, InterruptedError, UserError } from "../../../cli/errors";
import { REPO } from "../../helpers/cli";
import { tempDir } from "../../helpers/temp";
import { testUser } from "../../helpers/user";

const H = "/home/u";
const env = { HOME: H, XDG_RUNTIME_DIR: "/run/user/1000" };
const own = ownFolders(env, null, 1000);
const roots: OwnedRoots = own.roots;
const receipt = (over: Partial<Receipt> = {}): Receipt =>
  ({
    roots,
    files: [{ path: `${H}/.config/systemd/user/rootless-k8s.target`, sha256: "x", mode: 0o644, kind: "unit" }],
    sets: {},
    currentLink: `${roots.versions}/current`,
    kubeconfigMerge: null,
    ...over,
  }) as unknown as Receipt;

describe("mayRemovePath", () => {
  it("allows our unit files and paths strictly inside the tool's own folders", () => {
    expect(mayRemovePath(`${H}/.config/systemd/user/rootless-k8s.target`, own)).toBe(true);
    expect(mayRemovePath(`${roots.data}/etcd/member`, own)).toBe(true);
    expect(mayRemovePath("/run/user/1000/rootless-k8s/containerd", own)).toBe(true);
  });
  it("refuses everything else, .. tricks included", () => {
    expect(mayRemovePath(`${H}/.config/systemd/user/other.service`, own)).toBe(false);
    expect(mayRemovePath(H, own)).toBe(false);
    expect(mayRemovePath(roots.config, own)).toBe(false);
    expect(mayRemovePath(`${roots.data}/../../../..`, own)).toBe(false);
    expect(mayRemovePath(`${roots.config}/../../Documents/x`, own)).toBe(false);
    expect(mayRemovePath(`${H}/.local/share/rootless-k8s-other`, own)).toBe(false);
    expect(mayRemovePath("relative/rootless-k8s/x", own)).toBe(false);
  });
});

describe("checkReceiptPaths", () => {
  it("accepts a receipt whose folders are exactly the tool's", () => {
    expect(() => checkReceiptPaths(receipt(), own)).not.toThrow();
  });
  it("refuses a receipt whose folders are not the tool's, whatever their name", () => {
    expect(() => checkReceiptPaths(receipt({ roots: { ...roots, data: H } }), own)).toThrow(UserError);
    expect(() => checkReceiptPaths(receipt({ roots: { ...roots, data: "/home" } }), own)).toThrow(UserError);
    expect(() => checkReceiptPaths(receipt({ roots: { ...roots, data: `${H}/src/rootless-k8s` } }), own)).toThrow(
      /not the tool's data folder/,
    );
    expect(() => checkReceiptPaths(receipt({ roots: { ...roots, runtime: "relative/rootless-k8s" } }), own)).toThrow(
      /not the tool's runtime folder/,
    );
  });
  it("accepts folders of the --prefix given now, and refuses a prefix that is $HOME or /", () => {
    const p = ownFolders(env, `${H}/k8s`, 1000);
    expect(() => checkReceiptPaths(receipt({ roots: p.roots, files: [], currentLink: `${H}/k8s/versions/current` }), p)).not.toThrow();
    for (const bad of [H, "/", "/home"]) {
      const o = ownFolders(env, bad, 1000);
      expect(() => checkReceiptPaths(receipt({ roots: o.roots, files: [], currentLink: `${bad}/versions/current` }), o)).toThrow(
        /home folder/,
      );
    }
  });
});

describe("subordinate ids", () => {
  const text = "# comment\nalice:100000:65536\n1001:300000:1000\nbob:165536:65536\nalice:400000:10\n";
  it("reads ranges by name and by uid", () => {
    expect(subIdRanges(text, "alice", 1000)).toEqual([
      { start: 100000, count: 65536 },
      { start: 400000, count: 10 },
    ]);
    expect(subIdRanges(text, "carol", 1001)).toEqual([{ start: 300000, count: 1000 }]);
    expect(subIdRanges(text, "dave", 1002)).toEqual([]);
  });
  it("maps our id to 0 and the ranges from 1 on", () => {
    expect(
      idMapArgs(42, 1000, [
        { start: 100000, count: 65536 },
        { start: 400000, count: 10 },
      ]),
    ).toEqual(["42", "0", "1000", "1", "1", "100000", "65536", "65537", "400000", "10"]);
  });
});

describe("removeEmptyDirs", () => {
  it("removes empty folders up to the stop folder and keeps a non-empty one", () => {
    const d = tempDir("rk8s-rm-");
    mkdirSync(join(d, "a/b/c"), { recursive: true });
    writeFileSync(join(d, "a/keep"), "");
    return removeEmptyDirs(join(d, "a/b/c"), d).then(() => {
      expect(existsSync(join(d, "a/b"))).toBe(false);
      expect(existsSync(join(d, "a/keep"))).toBe(true);
    });
  });
});

// The real thing needs a non-root user with subordinate ids; as root, the test makes one.
const TEST_USER = "rk8s-apply-test";
const canMakeUser = process.getuid?.() === 0 && spawnSync("which", ["newuidmap"]).status === 0;

describe.skipIf(!canMakeUser)("removeTrees in a user namespace (as a real non-root user)", () => {
  it("removes files owned by sub-UIDs and read-only folders that a plain rm cannot", async () => {
    const user = testUser(TEST_USER, { subIds: "auto" });
    const subStart = subIdRanges(readFileSync("/etc/subuid", "utf8"), TEST_USER, user.uid)[0]!.start;
    const subgStart = subIdRanges(readFileSync("/etc/subgid", "utf8"), TEST_USER, user.uid)[0]!.start;
    const work = tempDir("rk8s-userns-");
    chmodSync(work, 0o755);
    const data = join(work, "rootless-k8s", "data");
    // A container's root file system as containerd leaves it: owned by sub-UIDs, some folders 0555.
    mkdirSync(join(data, "snapshots/1/fs/etc"), { recursive: true });
    writeFileSync(join(data, "snapshots/1/fs/etc/passwd"), "root:x:0:0::/:/bin/sh\n");
    writeFileSync(join(data, "snapshots/1/fs/etc/shadow"), "", { mode: 0o000 });
    writeFileSync(join(data, "mine"), "");
    user.own(join(work, "rootless-k8s"));
    chownSync(join(data, "snapshots/1/fs"), subStart, subgStart); // uid 1 inside the namespace
    chownSync(join(data, "snapshots/1/fs/etc"), subStart + 32, subgStart + 32);
    chownSync(join(data, "snapshots/1/fs/etc/passwd"), subStart + 999, subgStart + 999);
    chownSync(join(data, "snapshots/1/fs/etc/shadow"), subStart + 999, subgStart + 999);
    chmodSync(join(data, "snapshots/1/fs/etc"), 0o555);

    // Bundle a tiny runner that calls the product's removal, and run it as the user.
    const runner = join(work, "runner.cjs");
    const entry = join(work, "runner.ts");
    writeFileSync(
      entry,
      `import { removeTrees, currentIdentity } from ${JSON.stringify(join(REPO, "cli/apply/remove.ts"))};\nremoveTrees(process.argv.slice(2), currentIdentity).then(() => console.log("removed"), (e) => { console.error(e.message); process.exit(1); });\n`,
    );
    await build({ entryPoints: [entry], bundle: true, platform: "node", format: "cjs", outfile: runner, logLevel: "error" });
    chmodSync(runner, 0o644);

    // A plain rm as the user fails on the sub-UID files: the case this code exists for.
    const plain = user.run("rm", ["-rf", data], {});
    expect(plain.status).not.toBe(0);
    expect(plain.stderr).toMatch(/Permission denied/);

    const r = user.run(process.execPath, [runner, data], { PATH: "/usr/bin:/bin" });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("removed");
    expect(existsSync(data)).toBe(false);
    expect(existsSync(join(work, "rootless-k8s"))).toBe(true);
  });
});

describe("removeInUserNamespace when it cannot run", () => {
  const id = { user: "u", uid: 1000, gid: 1000, subuids: [{ start: 100000, count: 65536 }], subgids: [{ start: 100000, count: 65536 }] };

  it("ends as interrupted (exit 130) when the run was aborted, leaving no promise rejected unhandled", async () => {
    const stray: unknown[] = [];
    const onStray = (e: unknown) => stray.push(e);
    process.on("unhandledRejection", onStray);
    try {
      const ac = new AbortController();
      ac.abort();
      const e = await removeInUserNamespace([join(tempDir("rk8s-rm-abort-"), "x")], id, ac.signal).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(InterruptedError);
      expect((e as InterruptedError).exitCode).toBe(ExitCode.Interrupted);
      await new Promise((r) => setTimeout(r, 50));
      expect(stray).toEqual([]);
    } finally {
      process.off("unhandledRejection", onStray);
    }
  });

  it("names unshare and its package when unshare is not installed", async () => {
    const stray: unknown[] = [];
    const onStray = (e: unknown) => stray.push(e);
    process.on("unhandledRejection", onStray);
    const path = process.env.PATH;
    process.env.PATH = tempDir("rk8s-rm-nopath-");
    try {
      const e = await removeInUserNamespace([join(tempDir("rk8s-rm-none-"), "x")], id).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(UserError);
      expect((e as UserError).message).toMatch(/unshare is not installed/);
      expect((e as UserError).fix).toMatch(/util-linux/);
      await new Promise((r) => setTimeout(r, 50));
      expect(stray).toEqual([]);
    } finally {
      process.env.PATH = path;
      process.off("unhandledRejection", onStray);
    }
  });
});
