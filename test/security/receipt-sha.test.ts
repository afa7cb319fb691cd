// Issue 34: uninstall removes a file the receipt lists only when its content still has the sha256
// the receipt records. A receipt entry whose sha256 is empty, missing, null or malformed proves
// nothing about the file, so the file is kept with a note, as a changed file is. Run as an ordinary
// user against the bundled CLI, on real files, with the systemctl double on PATH.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI_BUNDLE } from "../helpers/cli";
import { sha256 } from "../helpers/hash";
import { testReceipt, testUninstallPlan } from "../helpers/receipts";
import { systemctlDouble } from "../helpers/systemctl-double";
import { tempDir } from "../helpers/temp";
import { runAs, testUser, USER_PATH } from "../helpers/user";

const user = testUser("rk8s-sb-receipt");
const fakeBin = systemctlDouble(tempDir("rk8s-sb-systemctl-"));

/** An installed node whose receipt lists three files; `victim` (kubelet.yaml) gets `sha` as its sha256. */
function installed(sha: unknown) {
  const root = tempDir("rk8s-sb-receipt-");
  chmodSync(root, 0o755);
  const home = join(root, "home");
  const run = join(root, "run");
  const share = join(home, ".local/share/rootless-k8s");
  const config = join(home, ".config/rootless-k8s");
  const unitDir = join(home, ".config/systemd/user");
  for (const d of [join(share, "data"), join(share, "versions"), join(config, "pki"), unitDir]) mkdirSync(d, { recursive: true });
  mkdirSync(run, { mode: 0o700 });
  const victim = join(config, "kubelet.yaml");
  const files = [
    { path: join(unitDir, "rootless-k8s.target"), content: "[Unit]\n", kind: "unit" },
    { path: victim, content: "kind: KubeletConfiguration\n# the user's own edits are not in any receipt\n", kind: "config" },
    { path: join(config, "pki", "ca.crt"), content: "CERT\n", kind: "pki" },
  ];
  for (const f of files) writeFileSync(f.path, f.content);
  const roots = {
    state: share,
    data: join(share, "data"),
    config,
    pki: join(config, "pki"),
    runtime: join(run, "rootless-k8s"),
    versions: join(share, "versions"),
    logs: join(home, ".local/state/rootless-k8s/logs"),
    libexec: join(share, "libexec"),
  };
  const receipt = testReceipt({
    units: ["rootless-k8s.target"],
    files: files.map((f) => {
      const entry: Record<string, unknown> = { path: f.path, sha256: sha256(f.content), mode: 0o644, kind: f.kind };
      if (f.path === victim) {
        if (sha === undefined) delete entry.sha256;
        else entry.sha256 = sha;
      }
      return entry;
    }),
    currentLink: join(share, "versions/current"),
    roots,
    plan: testUninstallPlan({ home, unitDir, logDir: roots.logs }),
  });
  writeFileSync(join(share, "receipt.json"), JSON.stringify(receipt));
  chmodSync(join(share, "receipt.json"), 0o600);
  user.own(root);
  const env = {
    HOME: home,
    USER: user.name,
    XDG_RUNTIME_DIR: run,
    PATH: `${fakeBin}:${USER_PATH}`,
    NO_COLOR: "1",
    ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
  };
  return { env, home, victim, victimContent: files[1]!.content, other: files[0]!.path, pki: files[2]!.path };
}

describe("uninstall keeps a file whose receipt entry has no valid sha256 (issue 34)", () => {
  const cases: [string, unknown][] = [
    ["an empty sha256", ""],
    ["no sha256 at all", undefined],
    ["a null sha256", null],
    ["a sha256 of 0", 0],
    ["a sha256 cut short", "abc123"],
  ];
  for (const [what, sha] of cases) {
    it(`${what}: the file is kept, with a note, and the rest is uninstalled`, async () => {
      const w = installed(sha);
      const r = await runAs(user, process.execPath, [CLI_BUNDLE, "uninstall", "--yes"], w.env, { timeoutMs: 30_000 });
      expect(r.stderr).not.toMatch(/\bat .*\.(js|ts|cjs):\d+|This is a bug/);
      expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
      expect(existsSync(w.victim), `${w.victim} was removed`).toBe(true);
      expect(readFileSync(w.victim, "utf8")).toBe(w.victimContent);
      expect(`${r.stdout}\n${r.stderr}`).toContain(`kept ${w.victim}: the receipt records no valid sha256 for it`);
      // The files whose recorded sha256 still matches are removed as before.
      expect(existsSync(w.other)).toBe(false);
    });
  }
});
