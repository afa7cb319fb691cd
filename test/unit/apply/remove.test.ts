// What uninstall may remove, and the removal of sub-UID-owned files from inside a user namespace:
// a real non-root user with real /etc/subuid ranges, real newuidmap, real files owned by sub-UIDs.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { checkOwnedRoots, idMapArgs, mayRemove, removeEmptyDirs, removeInUserNamespace, subIdRanges } from "../../../cli/apply/remove";
import type { OwnedRoots } from "../../../cli/apply/receipt";
import { ExitCode, InterruptedError, UserError } from "../../../cli/errors";
import { REPO } from "../../helpers/cli";
import { tempDir } from "../../helpers/temp";
import { testUser } from "../../helpers/user";

const H = "/home/u";
const roots: OwnedRoots = {
  state: `${H}/.local/share/rootless-k8s`,
  data: `${H}/.local/share/rootless-k8s/data`,
  config: `${H}/.config/rootless-k8s`,
  pki: `${H}/.config/rootless-k8s/pki`,
  runtime: "/run/user/1000/rootless-k8s",
  versions: `${H}/.local/share/rootless-k8s/versions`,
};

describe("mayRemove", () => {
  const receipt = { roots, files: [{ path: `${H}/.config/systemd/user/rootless-k8s.target`, sha256: "x", mode: 0o644, kind: "unit" as const }], sets: {}, currentLink: `${roots.versions}/current` };
  it("allows listed files and anything below the tool's own folders", () => {
    expect(mayRemove(`${H}/.config/systemd/user/rootless-k8s.target`, receipt)).toBe(true);
    expect(mayRemove(`${roots.data}/etcd/member`, receipt)).toBe(true);
    expect(mayRemove("/run/user/1000/rootless-k8s/containerd", receipt)).toBe(true);
  });
  it("refuses everything else, .. tricks included", () => {
    expect(mayRemove(`${H}/.config/systemd/user/other.service`, receipt)).toBe(false);
    expect(mayRemove(H, receipt)).toBe(false);
    expect(mayRemove(`${roots.data}/../../../..`, receipt)).toBe(false);
    expect(mayRemove(`${H}/.local/share/rootless-k8s-other`, receipt)).toBe(false);
  });
  it("refuses a receipt whose folders are not the tool's", () => {
    const where = { home: H, prefix: null };
    expect(() => checkOwnedRoots(roots, where)).not.toThrow();
    expect(() => checkOwnedRoots({ ...roots, data: H }, where)).toThrow(UserError);
    expect(() => checkOwnedRoots({ ...roots, data: "/home" }, where)).toThrow(UserError);
    expect(() => checkOwnedRoots({ ...roots, data: `${H}/.local/share` }, where)).toThrow(/not a rootless-k8s folder/);
    expect(() => checkOwnedRoots({ ...roots, runtime: "relative/rootless-k8s" }, where)).toThrow(/not a rootless-k8s folder/);
  });
  it("accepts folders inside a --prefix, but never the prefix's parents or $HOME", () => {
    const where = { home: H, prefix: `${H}/k8s` };
    expect(() => checkOwnedRoots({ ...roots, state: `${H}/k8s`, data: `${H}/k8s/data` }, where)).not.toThrow();
    expect(() => checkOwnedRoots({ ...roots, data: H }, { home: H, prefix: H })).toThrow(UserError);
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
    expect(idMapArgs(42, 1000, [{ start: 100000, count: 65536 }, { start: 400000, count: 10 }])).toEqual(["42", "0", "1000", "1", "1", "100000", "65536", "65537", "400000", "10"]);
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
    const user = testUser(TEST_USER, { subIds: 700000 });
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
    writeFileSync(entry, `import { removeTrees, currentIdentity } from ${JSON.stringify(join(REPO, "cli/apply/remove.ts"))};\nremoveTrees(process.argv.slice(2), currentIdentity).then(() => console.log("removed"), (e) => { console.error(e.message); process.exit(1); });\n`);
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
