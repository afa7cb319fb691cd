// cli/render: pure text from a plan. renderNode(plan, pki) lists every file of the node, with its
// absolute target path, content, mode bits, kind and the unit that reads it. The same plan and PKI
// always give byte-identical files (no timestamps), so a re-install changes nothing.
// generatePki(plan, {existing}) is separate so a re-install reuses the keys it already has.
import * as path from "node:path";
import { supervisorOf } from "../plan/supervisor";
import { serviceSpecFile } from "./services";
import type { Plan } from "../plan/plan";
import { PREFIX_MARKER } from "../plan/paths";
import { addonYaml, addons } from "./addons";
import { kubeProxyConfiguration, kubeletConfiguration, renderYaml } from "./kube-configs";
import { adminKubeconfig, componentKubeconfig, hostClientKubeconfig, renderKubeconfig, workerKubeProxyKubeconfig } from "./kubeconfig";
import { layout } from "./layout";
import { type CaName, type CertName, type Pki, certSpecs, pkiPaths } from "./pki";
import { renderOverlayConfig } from "./overlay";
import { renderNetworkPolicyConfig } from "./network-policy";
import { PORTS_USER, renderPortsConfig } from "./ports";
import { APPROVER_USER } from "./approver-rbac";
import { cniConflist, containerdConfig, crioConfig, crioPolicy, renderToml } from "./runtime-configs";
import {
  ociRuntimeWrapper,
  renderChildScript,
  renderEnterScript,
  renderKubeletNsScript,
  renderNetwatchScript,
  renderPublishScript,
} from "./scripts";
import { renderUnits } from "./units";
import { hasAuthenticationConfig, renderAuthenticationConfig } from "./authentication";

export { folders, layout } from "./layout";
export { addons, ADDON_LABEL, type Addon, type KubeObject } from "./addons";
export { generatePki, readPki, pkiPaths, certSpecs, type Pki, type KeyPairPem } from "./pki";
export {
  mergeKubeconfig,
  unmergeKubeconfig,
  entryDigest,
  bootstrapKubeconfig,
  renderKubeconfig,
  type KeptEntry,
  type KubeconfigDigests,
  type MergeResult,
  type UnmergeResult,
} from "./kubeconfig";
export { portsConfig, type PortsConfig } from "./ports";

export type RenderedKind = "unit" | "config" | "pki" | "kubeconfig" | "env" | "cni" | "script" | "addon";

export interface RenderedFile {
  /** Absolute target path. */
  path: string;
  content: string | Buffer;
  mode: number;
  kind: RenderedKind;
  /**
   * For kind "unit": the unit's name. For other files: the unit to restart when the file changes
   * (the target when every component reads it); absent when nothing needs a restart.
   */
  unit?: string;
}

const SECRET = 0o600;
const PUBLIC = 0o644;
const EXECUTABLE = 0o755;

/** Every file of a node: `pki` is the server's PKI; a worker has none of its own (null). */
export function renderNode(plan: Plan, pki: Pki | null): RenderedFile[] {
  if (plan.role === "worker")
    return [
      ...renderUnitFiles(plan),
      ...renderScripts(plan),
      renderEnv(plan),
      ...renderConfigs(plan),
      ...renderWorkerTrust(plan),
      ...renderPrefixMarker(plan),
    ];
  if (!pki) throw new Error("a server's files need its PKI");
  return [
    ...renderPrefixMarker(plan),
    ...renderUnitFiles(plan),
    ...renderScripts(plan),
    renderEnv(plan),
    ...renderConfigs(plan),
    ...renderPki(plan, pki),
    ...renderKubeconfigs(plan, pki),
    ...renderAddons(plan),
  ];
}

/** With --prefix: the marker that makes the folder rootless-k8s's own (PREFIX_MARKER). */
function renderPrefixMarker(plan: Plan): RenderedFile[] {
  if (!plan.paths.prefix) return [];
  const content =
    "This folder is the --prefix of a rootless-k8s node: rootless-k8s made what is in it.\n" +
    "`rootless-k8s uninstall --purge --prefix` removes only what rootless-k8s made here.\n";
  return [{ path: path.join(plan.paths.prefix, PREFIX_MARKER), content, mode: PUBLIC, kind: "config" }];
}

/** What the add-ons that are on apply (cli/apply/addons.ts applies the same objects); no restart. */
function renderAddons(plan: Plan): RenderedFile[] {
  return addons(plan)
    .filter((a) => a.enabled)
    .map((a) => ({ path: path.join(layout(plan).addonsDir, `${a.id}.yaml`), content: addonYaml(a), mode: PUBLIC, kind: "addon" as const }));
}

function renderUnitFiles(plan: Plan): RenderedFile[] {
  return renderUnits(plan).map((u) => ({
    // Under `up` the services are JSON (render/services.ts), named <unit>.json.
    path: path.join(plan.paths.unitDir, supervisorOf(plan) === "up" ? serviceSpecFile(u.name) : u.name),
    content: u.content,
    mode: PUBLIC,
    kind: "unit",
    unit: u.name,
  }));
}

function renderScripts(plan: Plan): RenderedFile[] {
  const l = layout(plan);
  const files: RenderedFile[] = [{ path: l.scripts.enter, content: renderEnterScript(plan), mode: EXECUTABLE, kind: "script" }];
  if (plan.runtime.name === "docker")
    files.push(
      { path: l.scripts.publish, content: renderPublishScript(plan), mode: EXECUTABLE, kind: "script", unit: plan.units.apiServer },
      { path: l.scripts.kubeletNs, content: renderKubeletNsScript(plan), mode: EXECUTABLE, kind: "script", unit: plan.units.kubelet },
    );
  else files.push({ path: l.scripts.child, content: renderChildScript(plan), mode: EXECUTABLE, kind: "script", unit: plan.units.owner });
  const netwatch = renderNetwatchScript(plan);
  if (netwatch) files.push({ path: l.scripts.netwatch, content: netwatch, mode: EXECUTABLE, kind: "script", unit: plan.units.owner });
  // Run anew by the shim for each container: a change needs no restart.
  const wrapper = ociRuntimeWrapper(plan);
  if (wrapper) files.push({ path: l.scripts.ociRuntime, content: wrapper, mode: EXECUTABLE, kind: "script" });
  return files;
}

/** A value for an EnvironmentFile= line: quoted when it has spaces or quotes. */
function envValue(v: string): string {
  return /^[^\s"'\\$`]*$/.test(v) ? v : `"${v.replace(/(["\\$`])/g, "\\$1")}"`;
}

export function renderEnv(plan: Plan): RenderedFile {
  const pathVar = [plan.paths.binDir, "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"].join(":");
  const content = [
    "# Environment of every rootless-k8s unit. Written by rootless-k8s from the node plan and",
    `# rewritten on every install: put your own variables in ${plan.paths.userEnvFile}, which is never`,
    "# written, e.g. KUBELET_EXTRA_ARGS=--v=4 (also KUBE_APISERVER_EXTRA_ARGS, ETCD_EXTRA_ARGS, ...).",
    `PATH=${envValue(pathVar)}`,
    ...(plan.memory ? [`# ${plan.memory.reasons[0]}.`, `GOGC=${plan.memory.goGC}`] : []),
    "",
  ].join("\n");
  return { path: plan.paths.envFile, content, mode: PUBLIC, kind: "env", unit: plan.units.target };
}

function renderConfigs(plan: Plan): RenderedFile[] {
  const l = layout(plan);
  const u = plan.units;
  const files: RenderedFile[] = [
    { path: l.kubeletConfig, content: renderYaml(kubeletConfiguration(plan)), mode: PUBLIC, kind: "config", unit: u.kubelet },
    { path: l.kubeProxyConfig, content: renderYaml(kubeProxyConfiguration(plan)), mode: PUBLIC, kind: "config", unit: u.kubeProxy },
  ];
  if (hasAuthenticationConfig(plan))
    files.push({ path: l.authenticationConfig, content: renderAuthenticationConfig(), mode: PUBLIC, kind: "config", unit: u.apiServer });
  // The runtime re-reads its CNI folder by itself: no restart. Written once the controller-manager
  // gave the node its pod range (until then the kubelet reports the network not ready).
  if (plan.cidrs.node !== null)
    files.push({ path: l.cniConflist, content: JSON.stringify(cniConflist(plan), null, 2) + "\n", mode: PUBLIC, kind: "cni" });
  if (u.ports) files.push({ path: l.portsConfig, content: renderPortsConfig(plan), mode: PUBLIC, kind: "config", unit: u.ports });
  if (u.overlay) files.push({ path: l.overlayConfig, content: renderOverlayConfig(plan), mode: PUBLIC, kind: "config", unit: u.overlay });
  if (u.networkPolicy)
    files.push({
      path: l.networkPolicyConfig,
      content: renderNetworkPolicyConfig(plan),
      mode: PUBLIC,
      kind: "config",
      unit: u.networkPolicy,
    });
  if (plan.runtime.name === "containerd") {
    files.push({ path: l.containerdConfig, content: renderToml(containerdConfig(plan)), mode: PUBLIC, kind: "config", unit: u.owner });
  }
  if (plan.runtime.name === "crio") {
    files.push(
      { path: l.crioConfig, content: renderToml(crioConfig(plan)), mode: PUBLIC, kind: "config", unit: u.owner },
      { path: l.crioPolicy, content: JSON.stringify(crioPolicy(), null, 2) + "\n", mode: PUBLIC, kind: "config", unit: u.owner },
    );
  }
  return files;
}

/** The unit that reads each certificate (the target for the CAs: every component trusts them). */
function pkiReader(plan: Plan, name: CaName | CertName): string {
  const u = plan.units;
  const readers: Record<CaName | CertName, string> = {
    ca: u.target,
    etcdCa: u.target,
    frontProxyCa: u.apiServer,
    apiServer: u.apiServer,
    apiServerKubeletClient: u.apiServer,
    apiServerEtcdClient: u.apiServer,
    etcdServer: u.etcd,
    kubeletClient: u.kubelet,
    kubeletServing: u.kubelet,
    controllerManager: u.controllerManager,
    scheduler: u.scheduler,
    kubeProxy: u.kubeProxy,
    admin: u.target,
    frontProxyClient: u.apiServer,
    ports: u.ports ?? u.target,
    csrApprover: u.csrApprover ?? u.target,
  };
  return readers[name];
}

function renderPki(plan: Plan, pki: Pki): RenderedFile[] {
  const paths = pkiPaths(plan);
  const files: RenderedFile[] = [];
  const pair = (name: CaName | CertName, p: { cert: string; key: string }) => {
    const unit = pkiReader(plan, name);
    const kp = pki[name];
    if (!kp) throw new Error(`the PKI has no ${name} certificate, which the plan needs`);
    files.push(
      { path: p.cert, content: kp.cert, mode: PUBLIC, kind: "pki", unit },
      { path: p.key, content: kp.key, mode: SECRET, kind: "pki", unit },
    );
  };
  for (const name of Object.keys(paths.cas) as CaName[]) pair(name, paths.cas[name]);
  for (const spec of certSpecs(plan)) pair(spec.name, paths.certs[spec.name]);
  files.push(
    { path: paths.serviceAccount.publicKey, content: pki.serviceAccount.publicKey, mode: PUBLIC, kind: "pki", unit: plan.units.apiServer },
    { path: paths.serviceAccount.privateKey, content: pki.serviceAccount.privateKey, mode: SECRET, kind: "pki", unit: plan.units.target },
  );
  return files;
}

/**
 * A worker holds no key of the cluster: only the control plane's CA (verified against the join's
 * pin), which the kubelet trusts for the API server's requests, and kube-proxy's kubeconfig, which
 * uses the certificate the kubelet got through TLS bootstrap.
 */
function renderWorkerTrust(plan: Plan): RenderedFile[] {
  const join = plan.join;
  if (!join) throw new Error("a worker's plan names its control plane");
  const l = layout(plan);
  const ca = pkiPaths(plan).cas.ca.cert;
  return [
    { path: ca, content: join.caPem, mode: PUBLIC, kind: "pki", unit: plan.units.target },
    {
      path: l.kubeconfigs.kubeProxy,
      content: renderKubeconfig(workerKubeProxyKubeconfig(plan, ca, l.kubeletCertDir)),
      mode: SECRET,
      kind: "kubeconfig",
      unit: plan.units.kubeProxy,
    },
  ];
}

function renderKubeconfigs(plan: Plan, pki: Pki): RenderedFile[] {
  const l = layout(plan).kubeconfigs;
  const u = plan.units;
  const component = (file: string, client: Exclude<CertName, "ports" | "csrApprover">, user: string, unit: string): RenderedFile => ({
    path: file,
    content: renderKubeconfig(componentKubeconfig(plan, pki, pki[client], user)),
    mode: SECRET,
    kind: "kubeconfig",
    unit,
  });
  const files: RenderedFile[] = [
    { path: l.admin, content: renderKubeconfig(adminKubeconfig(plan, pki)), mode: SECRET, kind: "kubeconfig" },
    component(l.kubelet, "kubeletClient", `system:node:${plan.node.name}`, u.kubelet),
    component(l.controllerManager, "controllerManager", "system:kube-controller-manager", u.controllerManager),
    component(l.scheduler, "scheduler", "system:kube-scheduler", u.scheduler),
    component(l.kubeProxy, "kubeProxy", "system:kube-proxy", u.kubeProxy),
  ];
  if (u.ports)
    files.push({
      path: l.ports,
      content: renderKubeconfig(hostClientKubeconfig(plan, pki, "ports", PORTS_USER)),
      mode: SECRET,
      kind: "kubeconfig",
      unit: u.ports,
    });
  if (u.csrApprover)
    files.push({
      path: l.csrApprover,
      content: renderKubeconfig(hostClientKubeconfig(plan, pki, "csrApprover", APPROVER_USER)),
      mode: SECRET,
      kind: "kubeconfig",
      unit: u.csrApprover,
    });
  return files;
}
