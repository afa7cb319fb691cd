// Writing the rendered node: only what differs from the disk, folders with their modes, stale files
// of an earlier plan found and removed; the receipt round-trips and refuses damage.
import { testReceipt } from "../../helpers/receipts";
import { promises as fsp, readFileSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { readReceipt, receiptLocation, writeReceipt, type Receipt } from "../../../cli/apply/receipt";
import { diffFiles, removeStale, toReceiptFile, writeFiles } from "../../../cli/apply/sync";
import type { RenderedFile } from "../../../cli/render/index";
import { UserError } from "../../../cli/errors";
import { tempDir } from "../../helpers/temp";

let dir: string;
beforeEach(() => {
  dir = tempDir("rk8s-sync-");
});

const file = (p: string, content: string, mode = 0o644, extra: Partial<RenderedFile> = {}): RenderedFile => ({
  path: join(dir, p),
  content,
  mode,
  kind: "config",
  ...extra,
});

function receiptWith(files: RenderedFile[]): Receipt {
  const roots = {
    state: join(dir, "s/rootless-k8s"),
    data: join(dir, "s/rootless-k8s/data"),
    config: join(dir, "c/rootless-k8s"),
    pki: join(dir, "c/rootless-k8s/pki"),
    runtime: join(dir, "r/rootless-k8s"),
    versions: join(dir, "s/rootless-k8s/versions"),
  };
  return testReceipt({
    files: files.map(toReceiptFile),
    currentLink: join(dir, "current"),
    roots,
    plan: null,
  });
}

describe("diffFiles and writeFiles", () => {
  it("writes new files into folders created with their modes, then finds nothing to write", async () => {
    const files = [file("cfg/pki/ca.key", "KEY", 0o600), file("cfg/kubelet.yaml", "kind: KubeletConfiguration\n")];
    const first = await diffFiles(files, null);
    expect(first.write.length).toBe(2);
    const created = await writeFiles(first.write, (d) => (d.endsWith("pki") ? 0o700 : 0o755));
    expect(created).toContain(join(dir, "cfg/pki"));
    expect(statSync(join(dir, "cfg/pki")).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "cfg/pki/ca.key")).mode & 0o777).toBe(0o600);
    const again = await diffFiles(files, receiptWith(files));
    expect(again.write).toEqual([]);
    expect(again.unchanged.length).toBe(2);
  });

  it("rewrites a file changed or deleted by hand, and one whose mode was loosened", async () => {
    const files = [file("a", "A"), file("b", "B"), file("k", "K", 0o600)];
    await writeFiles(files, () => 0o755);
    writeFileSync(join(dir, "a"), "edited");
    await fsp.rm(join(dir, "b"));
    await fsp.chmod(join(dir, "k"), 0o644);
    const d = await diffFiles(files, receiptWith(files));
    expect(d.write.map((f) => f.path).sort()).toEqual([join(dir, "a"), join(dir, "b"), join(dir, "k")]);
  });

  it("finds the files an earlier plan wrote that this one does not, and removes only those", async () => {
    const old = [file("containerd/config.toml", "v2"), file("kubelet.yaml", "x")];
    await writeFiles(old, () => 0o755);
    writeFileSync(join(dir, "users-own-file"), "mine");
    const now = [file("kubelet.yaml", "x"), file("crio/crio.conf", "y")];
    const d = await diffFiles(now, receiptWith(old));
    expect(d.stale.map((f) => f.path)).toEqual([join(dir, "containerd/config.toml")]);
    await removeStale(d.stale);
    expect(() => statSync(join(dir, "containerd/config.toml"))).toThrow();
    expect(readFileSync(join(dir, "users-own-file"), "utf8")).toBe("mine");
  });

  it("keeps a stale file that is not provably the one it wrote: changed, or its sha256 empty or malformed (issue 34)", async () => {
    const old = ["intact", "changed", "empty", "null", "short", "upper"].map((n) => file(`old/${n}.yaml`, `${n}\n`));
    await writeFiles(old, () => 0o755);
    writeFileSync(join(dir, "old/changed.yaml"), "edited by hand\n");
    const r = receiptWith(old);
    const entry = (n: string) => r.files.find((f) => f.path === join(dir, `old/${n}.yaml`))!;
    entry("empty").sha256 = "";
    (entry("null") as { sha256: unknown }).sha256 = null;
    entry("short").sha256 = entry("short").sha256.slice(0, 63);
    entry("upper").sha256 = entry("upper").sha256.toUpperCase();
    const d = await diffFiles([], r);
    const kept = await removeStale(d.stale);
    expect(() => statSync(join(dir, "old/intact.yaml"))).toThrow();
    for (const n of ["empty", "null", "short", "upper"]) expect(readFileSync(join(dir, `old/${n}.yaml`), "utf8")).toBe(`${n}\n`);
    expect(readFileSync(join(dir, "old/changed.yaml"), "utf8")).toBe("edited by hand\n");
    expect(kept.map((f) => f.path).sort()).toEqual(
      ["changed", "empty", "null", "short", "upper"].map((n) => join(dir, `old/${n}.yaml`)).sort(),
    );
  });
});

describe("the receipt", () => {
  it("round-trips, 0600 in a 0700 folder", async () => {
    const r = receiptWith([file("a", "A")]);
    const f = join(dir, "state", "receipt.json");
    await writeReceipt(f, r);
    expect(statSync(f).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "state")).mode & 0o777).toBe(0o700);
    const back = await readReceipt(f);
    expect(back?.files).toEqual(r.files);
    expect(back?.updatedAt).not.toBe("");
  });
  it("is null when absent and a clear error when damaged", async () => {
    expect(await readReceipt(join(dir, "none.json"))).toBeNull();
    writeFileSync(join(dir, "bad.json"), "{not json");
    await expect(readReceipt(join(dir, "bad.json"))).rejects.toThrow(UserError);
    writeFileSync(join(dir, "old.json"), JSON.stringify({ schemaVersion: 99 }));
    await expect(readReceipt(join(dir, "old.json"))).rejects.toThrow(/unknown format/);
  });
  it("is found from the environment as the plan would place it", () => {
    expect(receiptLocation({ HOME: "/home/a" })).toBe("/home/a/.local/share/rootless-k8s/receipt.json");
    expect(receiptLocation({ HOME: "/home/a", XDG_DATA_HOME: "/data" })).toBe("/data/rootless-k8s/receipt.json");
    expect(receiptLocation({ HOME: "/home/a", XDG_DATA_HOME: "relative" })).toBe("/home/a/.local/share/rootless-k8s/receipt.json");
    expect(receiptLocation({ HOME: "/home/a" }, "/opt/k8s")).toBe("/opt/k8s/receipt.json");
  });
  it("without HOME, is found in the passwd home, as the plan places it (never relative to the working folder)", () => {
    expect(receiptLocation({})).toBe(join(homedir(), ".local/share/rootless-k8s/receipt.json"));
    expect(receiptLocation({ HOME: "" })).toBe(join(homedir(), ".local/share/rootless-k8s/receipt.json"));
  });
});
