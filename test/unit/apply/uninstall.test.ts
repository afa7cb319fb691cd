// uninstall trusts the receipt's folders only once they pass checkOwnedRoots, judged against what the
// receipt cannot vouch for itself: the user's real home and the --prefix given on the command line.
// Run through the bundled CLI as an ordinary user (uninstall refuses root), with a temporary HOME.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI_BUNDLE } from "../../helpers/cli";
import { testUser } from "../../helpers/user";

const user = testUser("rk8s-uninst");

/** A receipt at the default place in `home`, with these roots and this plan (schema 1). */
function writeReceipt(home: string, roots: Record<string, string>, plan: unknown): void {
  const share = join(home, ".local/share/rootless-k8s");
  mkdirSync(share, { recursive: true });
  const receipt = { schemaVersion: 1, tool: "0.0.0", state: "installed", mode: "none", runtime: "containerd", target: "rootless-k8s.target", units: [], files: [], sets: {}, current: null, previous: null, currentLink: join(share, "versions/current"), roots, createdDirs: [], kubeconfigMerge: null, plan, updatedAt: "" };
  writeFileSync(join(share, "receipt.json"), JSON.stringify(receipt));
}

function uninstall(home: string, args: string[]) {
  user.own(home);
  const r = user.run(process.execPath, [CLI_BUNDLE, "uninstall", "--yes", ...args], { HOME: home, USER: user.name, NO_COLOR: "1", ROOTLESS_K8S_NO_UPDATE_CHECK: "1" });
  return { code: r.status, stderr: r.stderr };
}

describe("uninstall judges the receipt's folders", () => {
  it("refuses a receipt whose own plan names the prefix / to pass the home folder off as the tool's data", () => {
    const home = user.newHome();
    writeFileSync(join(home, "keep.txt"), "mine");
    const share = join(home, ".local/share/rootless-k8s");
    const roots = { state: share, data: home, config: join(home, ".config/rootless-k8s"), pki: join(home, ".config/rootless-k8s/pki"), runtime: join(home, ".run/rootless-k8s"), versions: join(share, "versions") };
    writeReceipt(home, roots, { paths: { home: "/nonexistent", prefix: "/" } });
    const r = uninstall(home, ["--purge"]);
    expect(r.code).toBe(1);
    expect(r.stderr.split("\n")[0]).toBe(`error: refusing to remove files: the receipt's data folder "${home}" is not a rootless-k8s folder`);
    expect(r.stderr).toMatch(/^fix: the receipt is damaged/m);
    expect(readFileSync(join(home, "keep.txt"), "utf8")).toBe("mine");
  });

  it("accepts folders below the --prefix given on the command line", () => {
    const home = user.newHome();
    const prefix = join(home, "k8s");
    const roots = { state: prefix, data: join(prefix, "data"), config: join(prefix, "config"), pki: join(prefix, "config/pki"), runtime: join(home, ".run/rootless-k8s"), versions: join(prefix, "versions") };
    mkdirSync(prefix, { recursive: true });
    const receipt = { schemaVersion: 1, tool: "0.0.0", state: "installed", mode: "none", runtime: "containerd", target: "rootless-k8s.target", units: [], files: [], sets: {}, current: null, previous: null, currentLink: join(prefix, "versions/current"), roots, createdDirs: [], kubeconfigMerge: null, plan: { paths: { home, prefix } }, updatedAt: "" };
    writeFileSync(join(prefix, "receipt.json"), JSON.stringify(receipt));
    const r = uninstall(home, ["--prefix", prefix]);
    // Past the folder check; here the next step needs the user's systemd, which this test user has not.
    expect(r.stderr).not.toMatch(/not a rootless-k8s folder/);
    expect(existsSync(join(prefix, "receipt.json"))).toBe(true);
  });
});
