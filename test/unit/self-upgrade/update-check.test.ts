// The daily background update check: its decisions (pure), then the real thing: the bundled CLI
// on a pseudo-terminal (script(1)), a detached child fetching latest.txt from 127.0.0.1, the
// one-line notice on the next run, and nothing at all under CI, off a terminal or when opted out.
import { execFile } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  decide,
  readState,
  stateFile,
  UPDATE_CHECK_INTERVAL_MS,
  updateCheckEnabled,
  type UpdateState,
} from "../../../cli/self/update-check";
import { CLI_BUNDLE, REPO, runCli } from "../../helpers/cli";
import { serveDir, type StaticServer } from "../../helpers/http-server";
import { tempDir } from "../../helpers/temp";

const DAY = UPDATE_CHECK_INTERVAL_MS;
/** The version stamped into the bundle under test (global-setup bundles the package.json version). */
const VERSION = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string }).version;
const BASE = "https://mirror.example";
const newer = (a: string, b: string) => a.localeCompare(b, undefined, { numeric: true }) > 0;

describe("decide (pure)", () => {
  const now = 1_800_000_000_000;
  const at = (s: UpdateState) => decide(s, now, "1.0.0", BASE, newer);

  it("checks when it never did, or a day has passed, or the base changed, or the clock went back", () => {
    expect(at({})).toEqual({ check: true });
    expect(at({ checkedAt: now - DAY, baseUrl: BASE })).toEqual({ check: true });
    expect(at({ checkedAt: now - DAY + 60_000, baseUrl: BASE })).toEqual({ check: false });
    expect(at({ checkedAt: now - 60_000, baseUrl: "https://other.example" })).toEqual({ check: true });
    expect(at({ checkedAt: now + DAY, baseUrl: BASE })).toEqual({ check: true });
  });

  it("tells about a newer release at most once a day, and only for the same base", () => {
    const found = { checkedAt: now - 60_000, baseUrl: BASE, latest: "1.2.0" };
    expect(at(found).notice).toBe(
      "A new release of rootless-k8s is available: 1.0.0 → 1.2.0. Run `rootless-k8s self-upgrade` to install it.",
    );
    expect(at({ ...found, notifiedAt: now - 60_000 }).notice).toBeUndefined();
    expect(at({ ...found, notifiedAt: now - DAY }).notice).toBeDefined();
    expect(at({ ...found, baseUrl: "https://other.example" }).notice).toBeUndefined();
    expect(at({ ...found, latest: "1.0.0" }).notice).toBeUndefined();
  });

  it("runs only on a terminal, never under CI or with ROOTLESS_K8S_NO_UPDATE_CHECK=1, never after self-upgrade or completion", () => {
    expect(updateCheckEnabled({}, true, "doctor")).toBe(true);
    expect(updateCheckEnabled({}, false, "doctor")).toBe(false);
    expect(updateCheckEnabled({ CI: "true" }, true, "doctor")).toBe(false);
    expect(updateCheckEnabled({ CI: "false" }, true, "doctor")).toBe(true);
    expect(updateCheckEnabled({ ROOTLESS_K8S_NO_UPDATE_CHECK: "1" }, true, "doctor")).toBe(false);
    expect(updateCheckEnabled({}, true, "self-upgrade")).toBe(false);
    expect(updateCheckEnabled({}, true, "completion")).toBe(false);
  });

  it("keeps its state under XDG_CACHE_HOME, else ~/.cache", () => {
    expect(stateFile({ XDG_CACHE_HOME: "/c", HOME: "/h" })).toBe("/c/rootless-k8s/update-check.json");
    expect(stateFile({ XDG_CACHE_HOME: "relative", HOME: "/h" })).toBe("/h/.cache/rootless-k8s/update-check.json");
    expect(stateFile({ HOME: "/h" })).toBe("/h/.cache/rootless-k8s/update-check.json");
  });
});

describe("the update check of the bundled CLI on a terminal", () => {
  let release: string;
  let server: StaticServer;

  beforeAll(async () => {
    release = tempDir("rk8s-latest-");
    writeFileSync(join(release, "latest.txt"), "99.0.0\n");
    server = await serveDir(release);
  });
  afterAll(async () => {
    await server.close();
  });

  const newCache = () => tempDir("rk8s-cache-");
  /** Runs a command that finishes at once (a usage error) on a pseudo-terminal; returns what the terminal showed. */
  const onTerminal = (cache: string, extra: Record<string, string> = {}) =>
    new Promise<string>((resolve, reject) => {
      const env: Record<string, string> = {
        PATH: "/usr/bin:/bin",
        HOME: cache,
        XDG_CACHE_HOME: cache,
        ROOTLESS_K8S_DOWNLOAD_URL: server.url,
        NO_COLOR: "1",
        ...extra,
      };
      execFile("script", ["-qec", `${process.execPath} ${CLI_BUNDLE} doctor --no-such-flag`, "/dev/null"], { env }, (err, stdout) =>
        err && err.code !== 2 ? reject(err) : resolve(stdout.replace(/\r/g, "")),
      );
    });
  const latestRecorded = async (cache: string) => {
    for (let i = 0; i < 200; i++) {
      const s = readState(join(cache, "rootless-k8s", "update-check.json"));
      if (s.latest) return s;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the background check never recorded latest.txt");
  };
  const latestRequests = () => server.paths().filter((p) => p === "/latest.txt").length;

  it("checks once in the background, tells on the next run in one line, then stays quiet for the day", async () => {
    const cache = newCache();
    const before = latestRequests();
    const first = await onTerminal(cache);
    expect(first).toContain("error: unknown option --no-such-flag");
    expect(first).not.toContain("new release");
    const state = await latestRecorded(cache);
    expect(state).toMatchObject({ latest: "99.0.0", baseUrl: server.url });
    expect(latestRequests()).toBe(before + 1);

    const second = await onTerminal(cache);
    expect(second.trimEnd().split("\n").at(-1)).toBe(
      `A new release of rootless-k8s is available: ${VERSION} → 99.0.0. Run \`rootless-k8s self-upgrade\` to install it.`,
    );
    const third = await onTerminal(cache);
    expect(third).not.toContain("new release");
    await new Promise((r) => setTimeout(r, 300));
    expect(latestRequests()).toBe(before + 1);

    const file = join(cache, "rootless-k8s", "update-check.json");
    writeFileSync(file, JSON.stringify({ ...readState(file), checkedAt: Date.now() - DAY - 1000, latest: undefined }));
    await onTerminal(cache);
    await latestRecorded(cache);
    expect(latestRequests()).toBe(before + 2);
  });

  it("does nothing under CI, with ROOTLESS_K8S_NO_UPDATE_CHECK=1, or off a terminal", async () => {
    const before = latestRequests();
    for (const extra of [{ CI: "true" }, { ROOTLESS_K8S_NO_UPDATE_CHECK: "1" }] as Record<string, string>[]) {
      const cache = newCache();
      const out = await onTerminal(cache, extra);
      expect(out).toContain("error: unknown option --no-such-flag");
      expect(existsSync(join(cache, "rootless-k8s"))).toBe(false);
    }
    const cache = newCache();
    const piped = await runCli(["doctor", "--no-such-flag"], {
      cleanEnv: true,
      env: {
        PATH: "/usr/bin:/bin",
        HOME: cache,
        XDG_CACHE_HOME: cache,
        ROOTLESS_K8S_DOWNLOAD_URL: server.url,
        ROOTLESS_K8S_NO_UPDATE_CHECK: undefined,
      },
    });
    expect(piped.code).toBe(2);
    expect(existsSync(join(cache, "rootless-k8s"))).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    expect(latestRequests()).toBe(before);
    expect(readFileSync(join(release, "latest.txt"), "utf8")).toBe("99.0.0\n");
  });
});
