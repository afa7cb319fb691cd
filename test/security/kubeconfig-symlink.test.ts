// Issue 34: uninstall takes out of ~/.kube/config only the entries install merged, and only while
// they are still exactly as install merged them (the digests the receipt records); an entry the
// user changed stays, named in a note. The file is written where it really is: a ~/.kube/config
// that is a symlink into the user's dotfiles stays that symlink, its target keeps its mode and its
// comments, and a file holding nothing of ours is not rewritten at all. Run as an ordinary user
// against the bundled CLI, on real files, with the systemctl double on PATH.
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { CLI_BUNDLE } from "../helpers/cli";
import { sha256 } from "../helpers/hash";
import { testReceipt, testUninstallPlan } from "../helpers/receipts";
import { systemctlDouble } from "../helpers/systemctl-double";
import { tempDir } from "../helpers/temp";
import { runAs, testUser, USER_PATH } from "../helpers/user";

const user = testUser("rk8s-se-kubecfg");
const fakeBin = systemctlDouble(tempDir("rk8s-se-kubecfg-systemctl-"));

const NAMES = { cluster: "rootless-k8s", user: "rootless-k8s-admin", context: "rootless-k8s" };
/** Our three entries as install merges them (cli/render/kubeconfig.ts). */
const OURS = {
  cluster: { name: NAMES.cluster, cluster: { server: "https://127.0.0.1:6443", "certificate-authority-data": "Q0EK" } },
  user: { name: NAMES.user, user: { "client-certificate-data": "Q0VSVAo=", "client-key-data": "S0VZCg==" } },
  context: { name: NAMES.context, context: { cluster: NAMES.cluster, user: NAMES.user } },
};

/** The receipt's digest of an entry: sha256 of its JSON with every object's keys sorted (the order kubectl writes them in does not count). */
function digest(entry: unknown): string {
  const canonical = (v: unknown): string =>
    Array.isArray(v)
      ? `[${v.map(canonical).join(",")}]`
      : v && typeof v === "object"
        ? `{${Object.keys(v)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
            .join(",")}}`
        : JSON.stringify(v);
  return sha256(canonical(entry));
}

/**
 * ~/.kube/config after install merged ours and the user went on with their own work: kubectl
 * rewrote it in its own key order and list style, and the user wrote comments into it.
 */
const KUBECONFIG = `# Kept in ~/dotfiles: the clusters I work with.
apiVersion: v1
clusters:
- cluster:
    server: https://prod.example:6443 # production, do not touch
  name: prod
- cluster:
    certificate-authority-data: Q0EK
    server: https://127.0.0.1:6443
  name: rootless-k8s
contexts:
- context:
    cluster: prod
    user: me
  name: prod
- context:
    cluster: rootless-k8s
    user: rootless-k8s-admin
  name: rootless-k8s
current-context: prod
kind: Config
preferences: {}
users:
- name: me
  user:
    token: my-token
- name: rootless-k8s-admin
  user:
    client-certificate-data: Q0VSVAo=
    client-key-data: S0VZCg==
`;

interface Node {
  home: string;
  kubeconfig: string;
  env: Record<string, string>;
}

/** An installed node whose receipt records the merge of OURS into ~/.kube/config (`place` lays that file out). */
function installed(place: (home: string) => void): Node {
  const root = tempDir("rk8s-se-kubecfg-");
  chmodSync(root, 0o755);
  const home = join(root, "home");
  const run = join(root, "run");
  const share = join(home, ".local/share/rootless-k8s");
  const config = join(home, ".config/rootless-k8s");
  const unitDir = join(home, ".config/systemd/user");
  for (const d of [join(share, "data"), join(share, "versions"), join(config, "pki"), unitDir, join(home, ".kube")])
    mkdirSync(d, { recursive: true });
  mkdirSync(run, { mode: 0o700 });
  writeFileSync(join(unitDir, "rootless-k8s.target"), "[Unit]\n");
  const kubeconfig = join(home, ".kube", "config");
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
  const receipt = {
    ...testReceipt({
      units: ["rootless-k8s.target"],
      files: [{ path: join(unitDir, "rootless-k8s.target"), sha256: sha256("[Unit]\n"), mode: 0o644, kind: "unit" }],
      currentLink: join(share, "versions/current"),
      roots,
      plan: testUninstallPlan({ home, unitDir, logDir: roots.logs }),
    }),
    kubeconfigMerge: {
      file: kubeconfig,
      ...NAMES,
      digests: { cluster: digest(OURS.cluster), user: digest(OURS.user), context: digest(OURS.context) },
    },
  };
  writeFileSync(join(share, "receipt.json"), JSON.stringify(receipt));
  chmodSync(join(share, "receipt.json"), 0o600);
  place(home);
  user.own(root);
  const env = {
    HOME: home,
    USER: user.name,
    XDG_RUNTIME_DIR: run,
    PATH: `${fakeBin}:${USER_PATH}`,
    NO_COLOR: "1",
    ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
  };
  return { home, kubeconfig, env };
}

async function uninstall(n: Node) {
  const r = await runAs(user, process.execPath, [CLI_BUNDLE, "uninstall", "--yes"], n.env, { timeoutMs: 30_000 });
  expect(r.stderr, "no stack trace").not.toMatch(/\bat .*\.(js|ts|cjs):\d+|This is a bug/);
  expect(r.code, r.stderr).toBe(0);
  return r;
}

const names = (doc: Record<string, unknown>, list: string) => ((doc[list] ?? []) as { name: string }[]).map((e) => e.name);

describe("uninstall and a ~/.kube/config the user keeps (issue 34)", () => {
  it("a symlink into ~/dotfiles stays a symlink; its target keeps its mode and comments, and loses only our entries", async () => {
    const n = installed((home) => {
      mkdirSync(join(home, "dotfiles"));
      writeFileSync(join(home, "dotfiles", "kubeconfig"), KUBECONFIG, { mode: 0o640 });
      chmodSync(join(home, "dotfiles", "kubeconfig"), 0o640);
      symlinkSync("../dotfiles/kubeconfig", join(home, ".kube", "config"));
    });
    const target = join(n.home, "dotfiles", "kubeconfig");
    await uninstall(n);
    expect(lstatSync(n.kubeconfig).isSymbolicLink(), "~/.kube/config is still a symlink").toBe(true);
    expect(readlinkSync(n.kubeconfig)).toBe("../dotfiles/kubeconfig");
    expect(statSync(target).mode & 0o7777).toBe(0o640);
    const text = readFileSync(target, "utf8");
    expect(text).toContain("# Kept in ~/dotfiles: the clusters I work with.");
    expect(text).toContain("# production, do not touch");
    const doc = YAML.parse(text) as Record<string, unknown>;
    expect(names(doc, "clusters")).toEqual(["prod"]);
    expect(names(doc, "users")).toEqual(["me"]);
    expect(names(doc, "contexts")).toEqual(["prod"]);
    expect(doc["current-context"]).toBe("prod");
    expect(readdirSync(join(n.home, "dotfiles")), "no temp file left beside the target").toEqual(["kubeconfig"]);
  });

  it("our cluster entry, changed by the user, stays and is named; our unchanged user and context go", async () => {
    const edited = KUBECONFIG.replace("    server: https://127.0.0.1:6443\n", "    server: https://127.0.0.1:7443 # moved it\n");
    const n = installed((home) => writeFileSync(join(home, ".kube", "config"), edited, { mode: 0o600 }));
    const r = await uninstall(n);
    expect(r.stderr).toMatch(/^note: kept in .*\.kube\/config: cluster rootless-k8s \(changed since install\)/m);
    expect(r.stderr).toContain(`kubectl config --kubeconfig ${n.kubeconfig} delete-cluster rootless-k8s`);
    const text = readFileSync(n.kubeconfig, "utf8");
    const doc = YAML.parse(text) as { clusters: { name: string; cluster: { server: string } }[] } & Record<string, unknown>;
    expect(names(doc, "clusters")).toEqual(["prod", "rootless-k8s"]);
    expect(doc.clusters[1]!.cluster.server).toBe("https://127.0.0.1:7443");
    expect(names(doc, "users")).toEqual(["me"]);
    expect(names(doc, "contexts")).toEqual(["prod"]);
    expect(text).toContain("# moved it");
    expect(statSync(n.kubeconfig).mode & 0o7777).toBe(0o600);
  });

  it("our context, changed by the user, stays with the cluster and user it uses: the file is not rewritten", async () => {
    const edited = KUBECONFIG.replace(
      "    user: rootless-k8s-admin\n  name: rootless-k8s\n",
      "    namespace: dev\n    user: rootless-k8s-admin\n  name: rootless-k8s\n",
    );
    expect(edited).not.toBe(KUBECONFIG);
    const n = installed((home) => writeFileSync(join(home, ".kube", "config"), edited, { mode: 0o600 }));
    const before = statSync(n.kubeconfig);
    const r = await uninstall(n);
    expect(r.stderr).toMatch(
      /^note: kept in .*: context rootless-k8s \(changed since install\); cluster rootless-k8s \(used by context rootless-k8s\); user rootless-k8s-admin \(used by context rootless-k8s\); if you no longer need them: kubectl config /m,
    );
    expect(readFileSync(n.kubeconfig, "utf8")).toBe(edited);
    const after = statSync(n.kubeconfig);
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  it("a file holding nothing of ours any more is left exactly as it is", async () => {
    const theirs = `# mine only
apiVersion: v1
clusters:
- cluster:
    server: https://prod.example:6443 # production
  name: prod
contexts:
- context:
    cluster: prod
    user: me
  name: prod
current-context: prod
kind: Config
users:
- name: me
  user:
    token: my-token
`;
    const n = installed((home) => writeFileSync(join(home, ".kube", "config"), theirs, { mode: 0o644 }));
    const before = statSync(n.kubeconfig);
    await uninstall(n);
    expect(readFileSync(n.kubeconfig, "utf8")).toBe(theirs);
    const after = statSync(n.kubeconfig);
    expect([after.ino, after.mtimeMs, after.mode & 0o7777]).toEqual([before.ino, before.mtimeMs, 0o644]);
  });
});
