// The test doubles are strict: each refuses what the real binary refuses (unknown flags, unknown
// config fields at any depth, unknown feature gates, missing or wrong files, loose key modes,
// conntrack sysctls a user namespace cannot write). The e2e tests run their happy paths against
// real etcd and containerd; here they run as built for the mirror, as child processes.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/temp";
import { makeTlsFixture, type TlsFixture } from "../helpers/tls-fixture";
import { buildDoubles } from "./build.mjs";

let dir: string;
let bin: string;
let broken: string;
let tls: TlsFixture;

beforeAll(async () => {
  dir = tempDir("rk8s-doubles-");
  bin = join(dir, "v1.36.0");
  broken = join(dir, "broken");
  await buildDoubles({ out: bin, version: "v1.36.0", node: process.execPath });
  await buildDoubles({ out: broken, version: "v1.37.1", node: process.execPath, only: ["kube-apiserver"], fault: "apiserver-exit" });
  tls = makeTlsFixture();
});

function run(name: string, args: string[], opts: { from?: string; prefix?: string[] } = {}) {
  const exe = join(opts.from ?? bin, name);
  const [cmd, ...rest] = opts.prefix ? [...opts.prefix, exe, ...args] : [exe, ...args];
  const r = spawnSync(cmd!, rest, { encoding: "utf8", timeout: 20_000 });
  return { code: r.status, out: r.stdout + r.stderr };
}

function file(name: string, text: string, mode = 0o644): string {
  const p = join(dir, name);
  writeFileSync(p, text, { mode });
  chmodSync(p, mode);
  return p;
}

const KUBELET_CONFIG =
  "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\nfailSwapOn: false\ncgroupsPerQOS: false\nenforceNodeAllocatable: []\n";

describe("every double", () => {
  it("prints its upstream-style version", () => {
    for (const n of ["kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"]) {
      expect(run(n, ["--version"])).toEqual({ code: 0, out: "Kubernetes v1.36.0\n" });
    }
  });
  it("refuses a flag the real binary does not have, in pflag's words", () => {
    for (const n of ["kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"]) {
      const r = run(n, ["--no-such-flag=1"]);
      expect(r.code).toBe(1);
      expect(r.out).toContain("Error: unknown flag: --no-such-flag");
    }
  });
  it("refuses a bad boolean", () => {
    expect(run("kubelet", ["--config=/x", "--register-node=maybe"]).out).toContain('invalid argument "maybe" for "--register-node"');
  });
});

describe("kubelet double", () => {
  it("decodes its config strictly, at every depth", () => {
    const cfg = file(
      "kubelet-bad.yaml",
      KUBELET_CONFIG + "authentication:\n  x509:\n    clientCAFile: /x\n    bogus: 1\ncgroupsPerQOSX: true\n",
    );
    const r = run("kubelet", [`--config=${cfg}`, "--kubeconfig=/nonexistent"]);
    expect(r.code).toBe(1);
    expect(r.out).toContain('strict decoding error: unknown field "authentication.x509.bogus", unknown field "cgroupsPerQOSX"');
  });
  it("refuses an unknown feature gate and a config of another kind", () => {
    expect(
      run("kubelet", [
        `--config=${file("g.yaml", KUBELET_CONFIG + "featureGates:\n  KubeletInUserNamespace: true\n  NoSuchGate: true\n")}`,
        "--kubeconfig=/x",
      ]).out,
    ).toContain("unrecognized feature gate: NoSuchGate");
    expect(run("kubelet", [`--config=${file("k.yaml", "apiVersion: v1\nkind: Pod\n")}`, "--kubeconfig=/x"]).out).toContain(
      'no kind "Pod" is registered for version "v1"',
    );
  });
  it.skipIf(existsSync("/sys/fs/cgroup/cgroup.controllers"))("refuses cgroup v1 unless failCgroupV1 is false, like kubelet >= 1.35", () => {
    const cfg = file("v1.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailSwapOn: false\n");
    expect(run("kubelet", [`--config=${cfg}`, "--kubeconfig=/x"]).out).toContain(
      "kubelet is configured to not run on a host using cgroup v1",
    );
  });
  it("refuses a kubeconfig whose identity is not a node", () => {
    const kc = tls.kubeconfig("https://127.0.0.1:1");
    const r = run("kubelet", [`--config=${file("ok.yaml", KUBELET_CONFIG)}`, `--kubeconfig=${kc}`, "--hostname-override=n1"]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/not a node identity/);
  });
});

describe("kube-apiserver double", () => {
  const base = () => {
    const key = file("server.key", tls.serverKey.toString(), 0o600);
    const cert = file("server.crt", tls.serverCert.toString());
    const ca = file("ca.crt", tls.ca.toString());
    const saKey = file("sa.key", tls.clientKey.toString(), 0o600);
    const saPub = file("sa.pub", tls.clientCert.toString());
    return [
      `--etcd-servers=http://127.0.0.1:1`,
      `--service-account-issuer=https://kubernetes.default.svc`,
      `--service-account-key-file=${saPub}`,
      `--service-account-signing-key-file=${saKey}`,
      `--tls-cert-file=${cert}`,
      `--tls-private-key-file=${key}`,
      `--client-ca-file=${ca}`,
      "--service-cluster-ip-range=10.96.0.0/16",
      "--authorization-mode=Node,RBAC",
    ];
  };
  it("requires the flags a node's API server cannot run without", () => {
    expect(run("kube-apiserver", ["--etcd-servers=https://127.0.0.1:2379"]).out).toContain("--service-account-issuer is required");
  });
  it("refuses a private key readable by others", () => {
    const args = base();
    const loose = file("loose.key", tls.serverKey.toString(), 0o644);
    const r = run(
      "kube-apiserver",
      args.map((a) => (a.startsWith("--tls-private-key-file=") ? `--tls-private-key-file=${loose}` : a)),
    );
    expect(r.code).toBe(1);
    expect(r.out).toContain("private keys must be 0600");
  });
  it("refuses a key that does not match its certificate, and a missing file", () => {
    const other = file("other.key", tls.strangerKey.toString(), 0o600);
    expect(
      run(
        "kube-apiserver",
        base().map((a) => (a.startsWith("--tls-private-key-file=") ? `--tls-private-key-file=${other}` : a)),
      ).out,
    ).toContain("does not match certificate");
    expect(
      run(
        "kube-apiserver",
        base().map((a) => (a.startsWith("--client-ca-file=") ? "--client-ca-file=/nope/ca.crt" : a)),
      ).out,
    ).toContain("open /nope/ca.crt: no such file or directory");
  });
  it("refuses an unknown authorization mode and feature gate", () => {
    expect(run("kube-apiserver", [...base(), "--authorization-mode=Node,Magic"]).out).toContain(
      'authorization-mode "Magic" is not a valid mode',
    );
    expect(run("kube-apiserver", [...base(), "--feature-gates=NoSuchGate=true"]).out).toContain("unrecognized feature gate: NoSuchGate");
  });
  it("the broken test release reads its flags, then fails as a bad build would", () => {
    const r = run("kube-apiserver", base(), { from: broken });
    expect(r.code).toBe(1);
    expect(r.out).toContain("v1.37.1: panic: runtime error");
    expect(run("kube-apiserver", ["--bogus"], { from: broken }).out).toContain("unknown flag: --bogus");
  });
});

describe("kube-proxy, kube-scheduler and kube-controller-manager doubles", () => {
  it("kube-proxy decodes its config strictly", () => {
    const cfg = file(
      "kp.yaml",
      "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\nconntrack:\n  maxPerCore: 0\n  typo: 1\n",
    );
    expect(run("kube-proxy", [`--config=${cfg}`]).out).toContain('unknown field "conntrack.typo"');
  });
  // As an ordinary user (nobody) in a user and network namespace, as the node's kube-proxy runs.
  const rootless = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "unshare", "--user", "--map-root-user", "--net"];
  it.skipIf(process.getuid?.() !== 0 || spawnSync(rootless[0]!, [...rootless.slice(1), "true"]).status !== 0)(
    "kube-proxy dies like the real one when told to write conntrack sysctls inside a user namespace",
    () => {
      chmodSync(dir, 0o755);
      chmodSync(bin, 0o755);
      const cfg = file("kp2.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n");
      const r = run("kube-proxy", [`--config=${cfg}`], { prefix: rootless });
      expect(r.code).toBe(1);
      expect(r.out).toMatch(/open \/proc\/sys\/net\/netfilter\/nf_conntrack_max: permission denied/);
      const zero = file(
        "kp3.yaml",
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\nconntrack:\n  maxPerCore: 0\n  tcpEstablishedTimeout: 0s\n  tcpCloseWaitTimeout: 0s\n",
      );
      expect(run("kube-proxy", [`--config=${zero}`], { prefix: rootless }).out).not.toMatch(/nf_conntrack/);
    },
  );
  it("kube-scheduler refuses an unknown config field", () => {
    const cfg = file(
      "ks.yaml",
      "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nclientConnection:\n  kubeconfig: /x\nleaderElection:\n  leaderElect: false\n  leaseDurationX: 1s\n",
    );
    expect(run("kube-scheduler", [`--config=${cfg}`]).out).toContain('unknown field "leaderElection.leaseDurationX"');
  });
  it("kube-controller-manager refuses a missing root CA", () => {
    const sa = file("kcm-sa.key", tls.clientKey.toString(), 0o600);
    expect(
      run("kube-controller-manager", ["--kubeconfig=/x", `--service-account-private-key-file=${sa}`, "--root-ca-file=/nope.crt"]).out,
    ).toContain("open /nope.crt: no such file or directory");
  });
});
