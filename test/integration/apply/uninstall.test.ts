// uninstall trusts the receipt's folders only once they pass checkReceiptPaths, judged against what the
// receipt cannot vouch for itself: the user's real home and the --prefix given on the command line.
// Run through the bundled CLI as an ordinary user (uninstall refuses root), with a temporary HOME.
import { testReceipt } from "../../helpers/receipts";
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { mergeAdminContext, unmergeAdminContext, type MergeRecord } from "../../../cli/apply/kubeconfig-merge";
import type { Receipt } from "../../../cli/apply/receipt";
import { buildPlan } from "../../../cli/plan";
import { generatePki } from "../../../cli/render/index";
import { entryDigest } from "../../../cli/render/kubeconfig";
import { CLI_BUNDLE } from "../../helpers/cli";
import { tempDir } from "../../helpers/temp";
import { testUser } from "../../helpers/user";
import { baseFacts, upstreamVersions } from "../../unit/plan/facts-builder";

const user = testUser("rk8s-uninst");

/** A receipt at the default place in `home`, with these roots and this plan (schema 1). */
function writeReceipt(home: string, roots: Record<string, string>, plan: unknown): void {
  const share = join(home, ".local/share/rootless-k8s");
  mkdirSync(share, { recursive: true });
  const receipt = testReceipt({
    currentLink: join(share, "versions/current"),
    roots,
    plan,
  });
  writeFileSync(join(share, "receipt.json"), JSON.stringify(receipt));
}

function uninstall(home: string, args: string[]) {
  user.own(home);
  const r = user.run(process.execPath, [CLI_BUNDLE, "uninstall", "--yes", ...args], {
    HOME: home,
    USER: user.name,
    NO_COLOR: "1",
    ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
  });
  return { code: r.status, stderr: r.stderr };
}

describe("uninstall judges the receipt's folders", () => {
  it("refuses a receipt whose own plan names the prefix / to pass the home folder off as the tool's data", () => {
    const home = user.newHome();
    writeFileSync(join(home, "keep.txt"), "mine");
    const share = join(home, ".local/share/rootless-k8s");
    const roots = {
      state: share,
      data: home,
      config: join(home, ".config/rootless-k8s"),
      pki: join(home, ".config/rootless-k8s/pki"),
      runtime: join(home, ".run/rootless-k8s"),
      versions: join(share, "versions"),
    };
    writeReceipt(home, roots, { paths: { home: "/nonexistent", prefix: "/" } });
    const r = uninstall(home, ["--purge"]);
    expect(r.code).toBe(1);
    expect(r.stderr.split("\n")[0]).toBe(
      `error: refusing to remove files: the receipt's data folder "${home}" is not the tool's data folder ${share}/data`,
    );
    expect(r.stderr).toMatch(/^fix: the receipt was edited or damaged/m);
    expect(readFileSync(join(home, "keep.txt"), "utf8")).toBe("mine");
  });

  it("accepts folders below the --prefix given on the command line", () => {
    const home = user.newHome();
    const prefix = join(home, "k8s");
    const roots = {
      state: prefix,
      data: join(prefix, "data"),
      config: join(prefix, "config"),
      pki: join(prefix, "config/pki"),
      runtime: `/run/user/${user.uid}/rootless-k8s`,
      versions: join(prefix, "versions"),
    };
    mkdirSync(prefix, { recursive: true });
    const receipt = testReceipt({
      currentLink: join(prefix, "versions/current"),
      roots,
      plan: { paths: { home, prefix } },
    });
    writeFileSync(join(prefix, "receipt.json"), JSON.stringify(receipt));
    const r = uninstall(home, ["--prefix", prefix]);
    // Past the folder check; here the next step needs the user's systemd, which this test user has not.
    expect(r.stderr).not.toMatch(/is not the tool's|refusing/);
    expect(existsSync(join(prefix, "receipt.json"))).toBe(true);
    // The install lock's folder, made only for the lock, goes with it: a --prefix node leaves nothing in ~/.local/share.
    expect(existsSync(join(home, ".local/share/rootless-k8s"))).toBe(false);
  });
});

describe("the admin context in ~/.kube/config: merged by install, taken out by uninstall", () => {
  const ours = {
    clusters: [{ name: "rootless-k8s", cluster: { server: "https://127.0.0.1:6443" } }],
    users: [{ name: "rootless-k8s-admin", user: {} }],
    contexts: [{ name: "rootless-k8s", context: { cluster: "rootless-k8s", user: "rootless-k8s-admin" } }],
  };
  // The receipt's record of the merge: names, and the digest of each entry as install merged it.
  const m = {
    context: "rootless-k8s",
    cluster: "rootless-k8s",
    user: "rootless-k8s-admin",
    digests: { cluster: entryDigest(ours.clusters[0]), user: entryDigest(ours.users[0]), context: entryDigest(ours.contexts[0]) },
  };
  const kubeDir = () => {
    const home = tempDir("rk8s-unmerge-");
    mkdirSync(join(home, ".kube"));
    return { home, file: join(home, ".kube", "config") };
  };

  it("takes our context, cluster and user out and keeps the user's own, and the file's mode", async () => {
    const { home, file } = kubeDir();
    const theirs = { name: "work", cluster: { server: "https://k8s.example:6443" } };
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "rootless-k8s",
        clusters: [...ours.clusters, theirs],
        users: ours.users,
        contexts: ours.contexts,
      }),
      { mode: 0o640 },
    );
    const removed: string[] = [];
    expect(await unmergeAdminContext({ file, ...m }, home, removed)).toBeNull();
    const left = YAML.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    expect(left.clusters).toEqual([theirs]);
    expect(left.contexts).toEqual([]);
    expect(left["current-context"]).toBeUndefined();
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(removed).toEqual([`${file} (cluster rootless-k8s, user rootless-k8s-admin, context rootless-k8s)`]);
  });

  it("removes the file (and ~/.kube) when only ours was in it", async () => {
    const { home, file } = kubeDir();
    writeFileSync(file, JSON.stringify({ apiVersion: "v1", kind: "Config", ...ours }));
    expect(await unmergeAdminContext({ file, ...m }, home, [])).toBeNull();
    expect(existsSync(join(home, ".kube"))).toBe(false);
  });

  it.each([
    ["not YAML (a hand edit gone wrong): the uninstall used to stop there, for good", "clusters: [\n  - name: x\n bad"],
    ["YAML, but no kubeconfig: it used to be deleted", "just some notes\n"],
  ])("leaves a file that is %s, and says what to do by hand", async (_what, text) => {
    const { home, file } = kubeDir();
    writeFileSync(file, text);
    const note = await unmergeAdminContext({ file, ...m }, home, []);
    expect(note).toMatch(/is no kubeconfig any more, so it was left as it is: take the context rootless-k8s .* out by hand/);
    expect(readFileSync(file, "utf8")).toBe(text);
  });

  it("keeps our entries of a receipt that recorded no digests (an older install), and says how to take them out", async () => {
    const { home, file } = kubeDir();
    const text = JSON.stringify({ apiVersion: "v1", kind: "Config", ...ours });
    writeFileSync(file, text);
    const { digests: _, ...legacy } = m;
    const note = await unmergeAdminContext({ file, ...legacy }, home, []);
    expect(note).toBe(
      `kept in ${file}: context rootless-k8s (the receipt does not record what install merged); cluster rootless-k8s (the receipt does not record what install merged); user rootless-k8s-admin (the receipt does not record what install merged); if you no longer need them: kubectl config --kubeconfig ${file} delete-context rootless-k8s && kubectl config --kubeconfig ${file} delete-cluster rootless-k8s && kubectl config --kubeconfig ${file} delete-user rootless-k8s-admin`,
    );
    expect(readFileSync(file, "utf8")).toBe(text);
  });

  it("install merges through a symlinked ~/.kube/config (comments kept, mode narrowed to the user), and uninstall takes out exactly that", async () => {
    const { home, file } = kubeDir();
    mkdirSync(join(home, "dotfiles"));
    const target = join(home, "dotfiles", "kubeconfig");
    const theirs =
      "# mine\napiVersion: v1\nkind: Config\nclusters:\n- name: prod # production\n  cluster:\n    server: https://prod.example:6443\ncontexts: []\nusers: []\n";
    writeFileSync(target, theirs);
    chmodSync(target, 0o644);
    symlinkSync(target, file);
    const plan = buildPlan(baseFacts(), {}, upstreamVersions());
    let receipt = testReceipt({}) as unknown as Receipt;
    const merged = await mergeAdminContext(
      { ...plan, paths: { ...plan.paths, userKubeconfig: file } },
      await generatePki(plan),
      receipt,
      async (r) => {
        receipt = r;
      },
    );
    expect(merged).toBe("rootless-k8s");
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    expect(statSync(target).mode & 0o777).toBe(0o600); // our admin key is in it now
    expect(readFileSync(target, "utf8")).toMatch(/^# mine\n[\s\S]*- name: prod # production\n[\s\S]*- name: rootless-k8s\n/);
    const record = receipt.kubeconfigMerge as MergeRecord;
    expect(record).toMatchObject({ file, cluster: "rootless-k8s", user: "rootless-k8s-admin", context: "rootless-k8s" });
    for (const d of Object.values(record.digests!)) expect(d).toMatch(/^[0-9a-f]{64}$/);

    const removed: string[] = [];
    expect(await unmergeAdminContext(record, home, removed)).toBeNull();
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, "utf8"), "the user's file as it was before install, byte for byte").toBe(theirs);
    expect(removed).toEqual([`${file} (cluster rootless-k8s, user rootless-k8s-admin, context rootless-k8s)`]);
  }, 60_000);
});
