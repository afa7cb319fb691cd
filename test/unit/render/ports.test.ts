// The port publisher's files from a real plan: its user unit (on the host, bound to the namespace
// owner like the kube units), its config, its own client certificate and kubeconfig (0600, no
// system:masters), and its RBAC; none of them where the plan turns publishing off (pasta) or where the
// plan predates it (an older receipt).
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { buildPlan } from "../../../cli/plan";
import type { Plan } from "../../../cli/plan/plan";
import { addons } from "../../../cli/render/addons";
import { folders, generatePki, layout, portsConfig, renderNode } from "../../../cli/render/index";
import { certSpecs } from "../../../cli/render/pki";
import { baseFacts, upstreamVersions, withFacts } from "../plan/facts-builder";

const versions = upstreamVersions();
const plan = buildPlan(baseFacts(), { selfCommand: ["/home/alice/.local/bin/rootless-k8s"] }, versions);
const pasta = buildPlan(
  withFacts(baseFacts(), (x) => {
    x.runtimes.slirp4netns = null;
    x.runtimes.pasta = { version: "2024_09_06.6b38f07", raw: "pasta 2024_09_06.6b38f07", path: "/usr/bin/pasta", hostLoToNsLo: false };
  }),
  { network: "pasta" },
  versions,
);
const pkiOf = (() => {
  const cache = new Map<Plan, ReturnType<typeof generatePki>>();
  return (p: Plan) => cache.get(p) ?? cache.set(p, generatePki(p)).get(p)!;
})();
const ports = (files: { path: string; unit?: string }[]) => files.filter((f) => f.path.includes("ports") || f.unit?.includes("ports"));

describe("the ports unit", () => {
  it("runs `rootless-k8s ports run --config` on the host, bound to the namespace owner like the kube units", async () => {
    const files = renderNode(plan, await pkiOf(plan));
    const unit = files.find((f) => f.kind === "unit" && f.unit === "rootless-k8s-ports.service")!;
    const text = unit.content.toString();
    expect(text).toContain(
      `ExecStart=/home/alice/.local/bin/rootless-k8s \\\n  ports \\\n  run \\\n  --config \\\n  /home/alice/.config/rootless-k8s/ports.json\n`,
    );
    expect(text).not.toContain("rootless-k8s-enter");
    for (const line of [
      "PartOf=rootless-k8s.target rootless-k8s-rootlesskit.service",
      "Requires=rootless-k8s-rootlesskit.service",
      "Wants=rootless-k8s-kube-apiserver.service",
      "After=rootless-k8s-rootlesskit.service rootless-k8s-kube-apiserver.service",
      "Restart=on-failure",
    ])
      expect(text).toContain(`${line}\n`);
    const target = files.find((f) => f.unit === plan.units.target && f.kind === "unit")!.content.toString();
    expect(target).toMatch(/^Wants=.* rootless-k8s-ports\.service( |$)/m);
  });

  it("reads a config naming its kubeconfig, RootlessKit's socket, the decisions and the state file (a change restarts it)", async () => {
    const files = renderNode(plan, await pkiOf(plan));
    const config = files.find((f) => f.path === layout(plan).portsConfig)!;
    expect(config).toMatchObject({ mode: 0o644, kind: "config", unit: "rootless-k8s-ports.service" });
    expect(JSON.parse(config.content.toString())).toEqual({
      kubeconfig: "/home/alice/.config/rootless-k8s/ports.kubeconfig",
      rootlesskitSocket: "/run/user/1000/rootless-k8s/rootlesskit/api.sock",
      bindAddress: "0.0.0.0",
      childIP: plan.network.namespaceIP,
      reserved: [6443, 8472],
      ingressIPs: ["192.168.1.20"],
      stateFile: "/run/user/1000/rootless-k8s/ports-state.json",
      nodeName: plan.node.name,
    });
    expect(portsConfig(buildPlan(baseFacts(), { apiPort: 7443, publishAddress: "127.0.0.1" }, versions))).toMatchObject({
      reserved: [7443, 8472],
      bindAddress: "127.0.0.1",
      ingressIPs: ["127.0.0.1"],
    });
  });

  it("has its own client certificate (CN rootless-k8s-ports, no organization) in a 0600 kubeconfig to the host's API port", async () => {
    const pki = await pkiOf(plan);
    expect(certSpecs(plan).find((s) => s.name === "ports")).toMatchObject({ commonName: "rootless-k8s-ports", issuer: "ca" });
    const cert = new X509Certificate(pki.ports!.cert);
    expect(cert.subject).toBe("CN=rootless-k8s-ports");
    expect(cert.checkIssued(new X509Certificate(pki.ca.cert))).toBe(true);
    const files = renderNode(plan, pki);
    const kc = files.find((f) => f.path === layout(plan).kubeconfigs.ports)!;
    expect(kc).toMatchObject({ mode: 0o600, kind: "kubeconfig", unit: "rootless-k8s-ports.service" });
    const doc = YAML.parse(kc.content.toString());
    expect(doc.clusters[0].cluster.server).toBe("https://127.0.0.1:6443");
    expect(Buffer.from(doc.users[0].user["client-certificate-data"], "base64").toString()).toBe(pki.ports!.cert);
    const key = files.find((f) => f.path.endsWith("/pki/ports.key"))!;
    expect(key.mode).toBe(0o600);
    expect(folders(plan).find((d) => d.path === plan.paths.pkiDir)?.mode).toBe(0o700);
    expect(folders(plan).find((d) => d.path === plan.paths.configDir)?.mode).toBe(0o700);
  });

  it("gets a ClusterRole of exactly what it uses, bound to its user, applied as the always-on ports add-on", () => {
    const addon = addons(plan).find((a) => a.id === "ports")!;
    expect(addon).toMatchObject({ enabled: true, ready: null });
    const [role, binding] = addon.objects as Record<string, any>[];
    expect(role!.kind).toBe("ClusterRole");
    expect(role!.rules).toEqual([
      { apiGroups: [""], resources: ["services", "pods"], verbs: ["get", "list", "watch"] },
      { apiGroups: [""], resources: ["services/status"], verbs: ["update", "patch"] },
      { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
    ]);
    expect(binding!.subjects).toEqual([{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "rootless-k8s-ports" }]);
    expect(binding!.roleRef.name).toBe(role!.metadata.name);
    for (const o of addon.objects) expect(o.metadata.labels).toEqual({ "rootless-k8s.io/addon": "ports" });
  });
});

describe("no port publisher", () => {
  it("with pasta: no unit, config, certificate or kubeconfig; its RBAC listed as off (deleted if an earlier install made it)", async () => {
    const files = renderNode(pasta, await pkiOf(pasta));
    expect(ports(files).map((f) => f.path)).toEqual([]);
    expect(certSpecs(pasta).some((s) => s.name === "ports")).toBe(false);
    expect(addons(pasta).find((a) => a.id === "ports")?.enabled).toBe(false);
  });

  it("for a plan older than publishing: the files it rendered before, nothing more", async () => {
    const old = { ...plan, units: { ...plan.units } } as Plan;
    delete old.publish;
    delete old.overlay;
    delete old.units.ports;
    delete old.units.csrApprover;
    delete old.units.overlay;
    delete old.networkPolicy;
    delete old.units.networkPolicy;
    const files = renderNode(old, await generatePki(old));
    expect(ports(files)).toEqual([]);
    expect(files.filter((f) => f.kind === "unit").map((f) => f.unit)).toEqual([
      "rootless-k8s.target",
      "rootless-k8s-rootlesskit.service",
      "rootless-k8s-etcd.service",
      "rootless-k8s-kube-apiserver.service",
      "rootless-k8s-kube-controller-manager.service",
      "rootless-k8s-kube-scheduler.service",
      "rootless-k8s-kubelet.service",
      "rootless-k8s-kube-proxy.service",
    ]);
    expect(addons(old).map((a) => a.id)).toEqual(["dns", "storage", "metrics"]);
  });
});
