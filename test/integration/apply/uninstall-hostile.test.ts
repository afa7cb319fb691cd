// Issue 16, defects 1-3: an edited or planted receipt cannot make `uninstall` delete anything outside
// the tool's own folders (computed from the environment and --prefix, never from the receipt), nor a
// file the tool did not write. Run through the bundled CLI as an ordinary user, with a stand-in
// systemctl (this machine has no user manager) so the removal step is really reached.
import { testReceipt, testUninstallPlan } from "../../helpers/receipts";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI_BUNDLE } from "../../helpers/cli";
import { systemctlDouble } from "../../helpers/systemctl-double";
import { tempDir } from "../../helpers/temp";
import { isRoot, testUser, USER_PATH } from "../../helpers/user";

const user = testUser("rk8s-hostile");
const fakeBin = systemctlDouble(tempDir("rk8s-systemctl-"));
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

interface Layout {
  home: string;
  run: string;
  share: string;
  config: string;
  unitDir: string;
  receiptFile: string;
  receipt: Record<string, unknown> & {
    files: { path: string; sha256: string; mode: number; kind: string }[];
    roots: Record<string, string>;
    plan: { paths: Record<string, string | null> };
  };
}

/** A home with the default layout of an installed node: one unit, one config, the PKI, data, and the user's own files. */
function layout(prefix?: (home: string) => string): Layout {
  const home = user.newHome();
  const run = user.newDir("rk8s-hostile-run-");
  const p = prefix?.(home);
  const share = p ?? join(home, ".local/share/rootless-k8s");
  const config = p ? join(p, "config") : join(home, ".config/rootless-k8s");
  const unitDir = join(home, ".config/systemd/user");
  for (const d of [
    share,
    join(share, "data"),
    join(share, "versions"),
    join(config, "pki"),
    unitDir,
    join(home, "Documents"),
    join(home, ".ssh"),
    join(home, "src/rootless-k8s"),
  ])
    mkdirSync(d, { recursive: true });
  const files = [
    { path: join(unitDir, "rootless-k8s.target"), content: "[Unit]\n" },
    { path: join(config, "kubelet.yaml"), content: "kind: KubeletConfiguration\n" },
    { path: join(config, "pki", "ca.crt"), content: "CERT\n" },
  ];
  for (const f of files) writeFileSync(f.path, f.content);
  writeFileSync(join(home, "Documents", "thesis.txt"), "years of work");
  writeFileSync(join(home, ".ssh", "id_ed25519"), "PRIVATE KEY");
  writeFileSync(join(home, "src/rootless-k8s", "main.go"), "package main");
  writeFileSync(
    join(home, "notes.yaml"),
    "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: [{name: rootless-k8s, context: {}}]\n",
  );
  writeFileSync(join(share, "data", "etcd.db"), "etcd");
  const roots = {
    state: share,
    data: join(share, "data"),
    config,
    pki: join(config, "pki"),
    runtime: join(run, "rootless-k8s"),
    versions: join(share, "versions"),
    logs: join(p ?? join(home, ".local/state/rootless-k8s"), "logs"),
    libexec: join(share, "libexec"),
  };
  const receipt = testReceipt({
    units: ["rootless-k8s.target"],
    files: files.map((f) => ({
      path: f.path,
      sha256: sha(f.content),
      mode: 0o644,
      kind: f.path.includes("/pki/") ? "pki" : f.path.endsWith(".target") ? "unit" : "config",
    })),
    currentLink: join(share, "versions/current"),
    roots,
    plan: testUninstallPlan({ home, prefix: p ?? null, unitDir, logDir: roots.logs, ...(p ? { cacheDir: join(p, "cache") } : {}) }),
  });
  return { home, run, share, config, unitDir, receiptFile: join(share, "receipt.json"), receipt };
}

function save(l: Layout): void {
  writeFileSync(l.receiptFile, JSON.stringify(l.receipt));
  user.own(l.home);
  user.own(l.run);
  chmodSync(l.receiptFile, 0o600);
}

function uninstall(l: Layout, args: string[] = []) {
  const r = user.run(process.execPath, [CLI_BUNDLE, "uninstall", "--yes", ...args], {
    HOME: l.home,
    USER: user.name,
    XDG_RUNTIME_DIR: l.run,
    PATH: `${fakeBin}:${USER_PATH}`,
    NO_COLOR: "1",
    ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The user's own files, all still there with their content. */
function expectUserFilesIntact(l: Layout): void {
  expect(readFileSync(join(l.home, "Documents", "thesis.txt"), "utf8")).toBe("years of work");
  expect(readFileSync(join(l.home, ".ssh", "id_ed25519"), "utf8")).toBe("PRIVATE KEY");
  expect(readFileSync(join(l.home, "src/rootless-k8s", "main.go"), "utf8")).toBe("package main");
  expect(readFileSync(join(l.home, "notes.yaml"), "utf8")).toMatch(/contexts: \[\{name: rootless-k8s/);
}

describe("uninstall removes only listed files inside the tool's own folders (issue 16, defect 1)", () => {
  it("an untouched receipt: its files go, the user's stay (the rules do not stop a real uninstall)", () => {
    const l = layout();
    save(l);
    const r = uninstall(l);
    expect(r.stderr).not.toMatch(/error/);
    expect(r.code).toBe(0);
    expect(existsSync(join(l.unitDir, "rootless-k8s.target"))).toBe(false);
    expect(existsSync(join(l.config, "kubelet.yaml"))).toBe(false);
    expect(readFileSync(join(l.config, "pki", "ca.crt"), "utf8")).toBe("CERT\n");
    expect(existsSync(join(l.share, "data", "etcd.db"))).toBe(true);
    expectUserFilesIntact(l);
  });

  for (const [what, victim] of [
    ["the home folder", (h: string) => h],
    ["~/.ssh/id_ed25519", (h: string) => join(h, ".ssh/id_ed25519")],
    ["~/Documents", (h: string) => join(h, "Documents")],
    ["a path that climbs out with ..", (h: string) => `${h}/.config/rootless-k8s/../../Documents/thesis.txt`],
  ] as const) {
    it(`refuses a receipt that lists ${what}, before anything is stopped`, () => {
      const l = layout();
      l.receipt.files.push({ path: victim(l.home), sha256: "", mode: 0o644, kind: "config" });
      save(l);
      const r = uninstall(l);
      expect(r.code).toBe(1);
      expect(r.stderr.split("\n")[0]).toMatch(
        /^error: refusing to uninstall: the receipt lists .* which lies outside the tool's own folders/,
      );
      expectUserFilesIntact(l);
      expect(existsSync(join(l.unitDir, "rootless-k8s.target"))).toBe(true);
    });
  }

  it("refuses a listed file reached through a symlink that leaves the tool's folders", () => {
    const l = layout();
    symlinkSync(join(l.home, "Documents"), join(l.config, "docs"));
    l.receipt.files.push({ path: join(l.config, "docs", "thesis.txt"), sha256: sha("years of work"), mode: 0o644, kind: "config" });
    save(l);
    const r = uninstall(l);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/outside the tool's own folders/);
    expectUserFilesIntact(l);
  });

  it("refuses kubeconfigMerge.file pointing anywhere but ~/.kube/config", () => {
    const l = layout();
    l.receipt.kubeconfigMerge = {
      file: join(l.home, "notes.yaml"),
      context: "rootless-k8s",
      cluster: "rootless-k8s",
      user: "rootless-k8s-admin",
    };
    save(l);
    const r = uninstall(l);
    expect(r.code).toBe(1);
    expect(r.stderr.split("\n")[0]).toMatch(/kubeconfig .*notes\.yaml.* is not ~\/\.kube\/config/);
    expectUserFilesIntact(l);
  });

  it("keeps a listed file whose content changed since the tool wrote it, and says so", () => {
    const l = layout();
    writeFileSync(join(l.config, "kubelet.yaml"), "edited by the user\n");
    save(l);
    const r = uninstall(l);
    expect(r.code).toBe(0);
    expect(readFileSync(join(l.config, "kubelet.yaml"), "utf8")).toBe("edited by the user\n");
    expect(r.stderr).toMatch(/kept .*kubelet\.yaml: changed since rootless-k8s wrote it/);
  });
});

describe("--purge resolves the folders it removes and compares them exactly (issue 16, defect 2)", () => {
  it("ignores a plan whose cacheDir climbs out of the tool's folders with ..", () => {
    const l = layout();
    l.receipt.plan.paths.cacheDir = `${l.share}/../../../Documents`;
    save(l);
    const r = uninstall(l, ["--purge"]);
    expectUserFilesIntact(l);
    expect(readdirSync(join(l.home, "Documents"))).toEqual(["thesis.txt"]);
    expect(r.code).toBe(0);
  });

  it("refuses roots.data set to a folder merely named rootless-k8s (~/src/rootless-k8s)", () => {
    const l = layout();
    l.receipt.roots.data = join(l.home, "src/rootless-k8s");
    save(l);
    const r = uninstall(l, ["--purge"]);
    expect(r.code).toBe(1);
    expect(r.stderr.split("\n")[0]).toMatch(/the receipt's data folder .*src\/rootless-k8s.* is not the tool's data folder/);
    expectUserFilesIntact(l);
  });

  it("refuses --prefix $HOME (the home folder is never the tool's folder)", () => {
    const l = layout((h) => h);
    save(l);
    const r = uninstall(l, ["--purge", "--prefix", l.home]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/home folder/);
    expectUserFilesIntact(l);
  });
});

describe("a receipt is trusted only when only the user could have written it (issue 16, defect 3)", () => {
  it("refuses a receipt writable by others", () => {
    const l = layout();
    save(l);
    chmodSync(l.receiptFile, 0o666);
    const r = uninstall(l);
    expect(r.code).toBe(3);
    expect(r.stderr.split("\n")[0]).toMatch(/^error: refusing to trust the receipt .*receipt\.json: it is writable by others/);
    expect(existsSync(join(l.config, "kubelet.yaml"))).toBe(true);
  });

  it("refuses a receipt in a folder writable by others (a --prefix folder someone else can write)", () => {
    const l = layout((h) => join(h, "k8s"));
    save(l);
    chmodSync(l.share, 0o777);
    const r = uninstall(l, ["--prefix", l.share]);
    expect(r.code).toBe(3);
    expect(r.stderr.split("\n")[0]).toMatch(/^error: refusing to trust the receipt .*: its folder .* is writable by others/);
    expect(existsSync(join(l.config, "kubelet.yaml"))).toBe(true);
  });

  it.runIf(isRoot)("refuses a root-owned 0644 receipt in a --prefix folder", () => {
    const l = layout((h) => join(h, "k8s"));
    save(l);
    chownSync(l.receiptFile, 0, 0);
    chmodSync(l.receiptFile, 0o644);
    const r = uninstall(l, ["--prefix", l.share]);
    expect(r.code).toBe(3);
    expect(r.stderr.split("\n")[0]).toMatch(/^error: refusing to trust the receipt .*: it is owned by uid 0, not by you/);
    expect(existsSync(join(l.config, "kubelet.yaml"))).toBe(true);
  });
});
