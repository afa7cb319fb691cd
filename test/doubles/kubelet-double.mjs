// TEST DOUBLE of the kubelet (this machine cannot obtain the real one). Installed under the name
// `kubelet` only inside the e2e mirror's archives; the product does not know it is a double.
//
// Strict like the real kubelet: every flag must be a real kubelet flag, the --config file is decoded
// strictly (unknown fields at any depth are refused, checked against Kubernetes 1.36's types in
// data/k8s-config-fields.json), feature gates must exist, and the host checks a real kubelet makes
// are made (cgroup v1 without failCgroupV1: false, swap without failSwapOn: false, cgroups it must
// be able to create when cgroupsPerQOS is on). Then it does a kubelet's job as far as a double can:
// it talks CRI v1 to the runtime socket, registers the Node with the API server over mutual TLS
// using its kubeconfig, reports Ready only while the runtime says RuntimeReady and NetworkReady,
// runs one pod sandbox through the CRI (pause container + CNI bridge IP) and records its IP on the
// Node, serves its healthz port, and sends sd_notify READY=1.
import { mkdirSync, readFileSync, existsSync } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as os from "node:os";
import { parse } from "yaml";
import { criClient } from "../../cli/clients/cri.ts";
import { enums, unknownFeatureGates, unknownFields } from "./lib/config-fields.mjs";
import { apiClient, loadKubeconfig, notifyReady } from "./lib/kube.mjs";
import { checkPair, die, loadCert, log, onStop, parseFlags, readFileOrDie, requireFlags, VERSION } from "./lib/strict.mjs";

const C = "kubelet";
const S = "string",
  B = "bool",
  L = "list",
  I = "int";
// Real kubelet flags (kubernetes v1.36 `kubelet --help`; reference: kubernetes/website
// content/en/docs/reference/command-line-tools-reference/kubelet.md).
const FLAGS = {
  config: S,
  "config-dir": S,
  kubeconfig: S,
  "bootstrap-kubeconfig": S,
  "hostname-override": S,
  "node-ip": S,
  "node-labels": L,
  "root-dir": S,
  "cert-dir": S,
  "container-runtime-endpoint": S,
  "image-service-endpoint": S,
  v: I,
  vmodule: L,
  "log-flush-frequency": S,
  "logging-format": S,
  "feature-gates": L,
  "register-node": B,
  "register-with-taints": L,
  "runtime-cgroups": S,
  "provider-id": S,
  "cloud-provider": S,
  "lock-file": S,
  "exit-on-lock-contention": B,
  "seccomp-default": B,
  "runtime-request-timeout": S,
  "max-pods": I,
  "pod-cidr": S,
  "cluster-dns": L,
  "cluster-domain": S,
  "resolv-conf": S,
  "fail-swap-on": B,
  "cgroup-driver": S,
  "cgroups-per-qos": B,
  "cgroup-root": S,
  "enforce-node-allocatable": L,
  "volume-plugin-dir": S,
  "local-storage-capacity-isolation": B,
  "healthz-port": I,
  "healthz-bind-address": S,
  "read-only-port": I,
  port: I,
  address: S,
  "tls-cert-file": S,
  "tls-private-key-file": S,
  "client-ca-file": S,
  "anonymous-auth": B,
  "authorization-mode": S,
  "authentication-token-webhook": B,
  "kube-reserved": L,
  "system-reserved": L,
  "eviction-hard": L,
  "node-status-update-frequency": S,
  "rotate-certificates": B,
};

const f = parseFlags(C, FLAGS);
requireFlags(C, f, ["config"]);
if (!f.kubeconfig && !f["bootstrap-kubeconfig"]) die(C, "no --kubeconfig: this kubelet would run standalone, which a node does not");

// --- the config file, decoded strictly -----------------------------------------------------------
const cfgPath = f.config;
const cfgText = readFileOrDie(C, cfgPath, "kubelet config file").toString("utf8");
let cfg;
try {
  cfg = parse(cfgText);
} catch (e) {
  die(C, `failed to load kubelet config file, path: ${cfgPath}, error: ${e.message}`);
}
if (cfg?.apiVersion !== "kubelet.config.k8s.io/v1beta1" || cfg?.kind !== "KubeletConfiguration") {
  die(
    C,
    `failed to load kubelet config file, path: ${cfgPath}, error: no kind "${cfg?.kind}" is registered for version "${cfg?.apiVersion}"`,
  );
}
const unknown = unknownFields(cfg, "KubeletConfiguration");
if (unknown.length)
  die(
    C,
    `failed to load kubelet config file, path: ${cfgPath}, error: strict decoding error: ${unknown.map((u) => `unknown field "${u}"`).join(", ")}`,
  );
const badGates = unknownFeatureGates(cfg.featureGates);
const flagGates = Object.fromEntries((f["feature-gates"] ?? []).map((g) => g.split("=")).map(([k, v]) => [k, v === "true"]));
badGates.push(...unknownFeatureGates(flagGates));
if (badGates.length) die(C, `failed to set feature gates from initial flags-based config: unrecognized feature gate: ${badGates[0]}`);
const gates = { ...cfg.featureGates, ...flagGates };
if (cfg.hairpinMode && !enums.HairpinMode.values.includes(cfg.hairpinMode))
  die(C, `invalid configuration: hairpinMode "${cfg.hairpinMode}"`);
if (cfg.authorization?.mode && !enums.KubeletAuthorizationMode.values.includes(cfg.authorization.mode))
  die(C, `invalid configuration: authorization.mode "${cfg.authorization.mode}"`);
const cgroupDriver = f["cgroup-driver"] ?? cfg.cgroupDriver ?? "cgroupfs";
if (!["cgroupfs", "systemd"].includes(cgroupDriver))
  die(C, `invalid configuration: cgroupDriver "${cgroupDriver}": stock kubelets accept only cgroupfs and systemd`);
if (cfg.authentication?.x509?.clientCAFile) loadCert(C, cfg.authentication.x509.clientCAFile, "authentication.x509.clientCAFile");
if (cfg.tlsCertFile || cfg.tlsPrivateKeyFile) checkPair(C, cfg.tlsCertFile, cfg.tlsPrivateKeyFile, "kubelet serving");
if (cfg.staticPodPath && !existsSync(cfg.staticPodPath))
  log(C, "W", `staticPodPath ${cfg.staticPodPath} does not exist (ignored, as the kubelet does)`);

// --- host checks of a real kubelet ---------------------------------------------------------------
const cgroupV2 = existsSync("/sys/fs/cgroup/cgroup.controllers");
if (!cgroupV2 && cfg.failCgroupV1 !== false) {
  die(
    C,
    "Failed to run kubelet: kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release (set failCgroupV1: false to allow it)",
  );
}
const swapKiB = Number(/SwapTotal:\s+(\d+)/.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0);
if (swapKiB > 0 && (f["fail-swap-on"] ?? cfg.failSwapOn) !== false)
  die(C, `Failed to run kubelet: running with swap on is not supported, please disable swap or set --fail-swap-on flag to false`);
if (!gates.KubeletInUserNamespace) {
  const uidMap = readFileSync("/proc/self/uid_map", "utf8").trim();
  if (!/^0\s+0\s+4294967295$/.test(uidMap))
    log(C, "W", "running in a user namespace without the KubeletInUserNamespace feature gate: sysctl and /dev/kmsg errors will be fatal");
}
const cgroupsPerQOS = f["cgroups-per-qos"] ?? cfg.cgroupsPerQOS ?? true;
const cgroupRoot = f["cgroup-root"] ?? cfg.cgroupRoot ?? "/";
let podCgroupParent = "";
if (cgroupsPerQOS) {
  // The ContainerManager creates the top-level pod cgroup and needs cpu, memory and pids there.
  if (!cgroupV2)
    die(C, "Failed to start ContainerManager: cgroupsPerQOS needs writable cgroups; this host has cgroup v1 without delegation");
  const base = `/sys/fs/cgroup${cgroupRoot === "/" ? "" : cgroupRoot}`;
  const ctl = readFileSync(`${base}/cgroup.subtree_control`, "utf8").trim().split(/\s+/);
  const missing = ["cpu", "memory", "pids"].filter((c) => !ctl.includes(c));
  if (missing.length)
    die(
      C,
      `Failed to start ContainerManager: failed to initialize top level QOS containers: root container [${cgroupRoot}] doesn't exist or lacks controllers ${missing.join(", ")} in ${base}/cgroup.subtree_control`,
    );
  const kubepods = `${base}/kubepods`;
  try {
    mkdirSync(kubepods, { recursive: true });
  } catch (e) {
    die(
      C,
      `Failed to start ContainerManager: mkdir ${kubepods}: ${e.code === "EACCES" || e.code === "EPERM" ? "permission denied" : e.message}`,
    );
  }
  podCgroupParent = `${cgroupRoot === "/" ? "" : cgroupRoot}/kubepods`;
  log(C, "I", `cgroupsPerQOS: pods go below ${kubepods} (controllers: ${ctl.join(" ")})`);
}

// --- identity and connections --------------------------------------------------------------------
const kc = loadKubeconfig(C, f.kubeconfig ?? f["bootstrap-kubeconfig"]);
const subjCN = /CN=([^\n]+)/.exec(kc.subject)?.[1] ?? "";
const subjO = /O=([^\n]+)/.exec(kc.subject)?.[1] ?? "";
if (!subjCN.startsWith("system:node:") || subjO !== "system:nodes")
  die(
    C,
    `kubeconfig client certificate is "${kc.subject.replace(/\n/g, ", ")}", not a node identity (CN=system:node:<name>, O=system:nodes)`,
  );
const nodeName = (f["hostname-override"] ?? os.hostname()).toLowerCase();
if (subjCN !== `system:node:${nodeName}`)
  die(C, `node name "${nodeName}" does not match the client certificate's "${subjCN}": the Node authorizer would refuse every update`);
const api = apiClient(kc);
const endpoint = f["container-runtime-endpoint"] ?? cfg.containerRuntimeEndpoint;
if (!endpoint) die(C, "no containerRuntimeEndpoint in the config");
if (!endpoint.startsWith("unix://")) die(C, `containerRuntimeEndpoint "${endpoint}" is not a unix:// endpoint`);
const cri = criClient(endpoint);

const labels = {
  "kubernetes.io/hostname": nodeName,
  "kubernetes.io/os": "linux",
  "kubernetes.io/arch": process.arch === "x64" ? "amd64" : process.arch,
  ...Object.fromEntries((f["node-labels"] ?? []).map((l) => l.split("="))),
};
const taints = [
  ...(cfg.registerWithTaints ?? []),
  ...(f["register-with-taints"] ?? []).map((t) => {
    const [kv, effect] = t.split(":");
    const [key, value] = kv.split("=");
    return { key, value, effect };
  }),
];

let runtime = null;
let probe = { ip: "", error: "not tried yet" };
let lastPodTry = 0;

async function criConditions() {
  try {
    if (!runtime) runtime = await cri.version();
    const conds = (await cri.status()).conditions;
    return { conds, error: null };
  } catch (e) {
    runtime = null;
    return { conds: [], error: e.message };
  }
}

/** The probe pod: one sandbox through the CRI, like a kubelet runs a pod's sandbox first. */
async function ensureProbePod() {
  if (probe.ip || Date.now() - lastPodTry < 15_000) return;
  lastPodTry = Date.now();
  try {
    const mine = (await cri.listPodSandboxes()).filter((s) => s.name === "rk8s-node-probe");
    // A sandbox from before a runtime restart is dead: remove it, as the kubelet's pod workers do.
    for (const dead of mine.filter((s) => s.state !== "SANDBOX_READY")) {
      await cri.stopPodSandbox(dead.id);
      await cri.removePodSandbox(dead.id);
    }
    const existing = mine.find((s) => s.state === "SANDBOX_READY");
    const id =
      existing?.id ??
      (await cri.runPodSandbox({
        name: "rk8s-node-probe",
        uid: `${nodeName}-probe`,
        namespace: "kube-system",
        hostname: "rk8s-node-probe",
        cgroupParent: podCgroupParent,
        labels: { "io.kubernetes.pod.name": "rk8s-node-probe" },
      }));
    const st = await cri.podSandboxStatus(id);
    probe =
      st.state === "SANDBOX_READY" && st.ip
        ? { ip: st.ip, error: "" }
        : { ip: "", error: `sandbox ${id.slice(0, 12)} is ${st.state} with ip "${st.ip}"` };
    log(C, "I", probe.ip ? `probe pod sandbox ${id.slice(0, 12)} is ready with IP ${probe.ip}` : probe.error);
  } catch (e) {
    probe = { ip: "", error: e.message.split("\n")[0] };
    log(C, "W", `probe pod sandbox: ${probe.error}`);
  }
}

function nodeStatus({ conds, error }) {
  const now = new Date().toISOString();
  const rr = conds.find((c) => c.type === "RuntimeReady");
  const nr = conds.find((c) => c.type === "NetworkReady");
  const ready = !error && rr?.status && nr?.status;
  const why = error
    ? `container runtime is down: ${error}`
    : !rr?.status
      ? `container runtime not ready: ${rr?.reason ?? "no RuntimeReady condition"}`
      : !nr?.status
        ? `container runtime network not ready: NetworkReady=false reason:${nr?.reason ?? ""} message:${nr?.message ?? ""}`
        : "kubelet is posting ready status";
  const addr = f["node-ip"];
  return {
    conditions: [
      {
        type: "MemoryPressure",
        status: "False",
        reason: "KubeletHasSufficientMemory",
        message: "kubelet has sufficient memory available",
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      },
      {
        type: "DiskPressure",
        status: "False",
        reason: "KubeletHasNoDiskPressure",
        message: "kubelet has no disk pressure",
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      },
      {
        type: "PIDPressure",
        status: "False",
        reason: "KubeletHasSufficientPID",
        message: "kubelet has sufficient PID available",
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      },
      {
        type: "Ready",
        status: ready ? "True" : "False",
        reason: ready ? "KubeletReady" : "KubeletNotReady",
        message: why,
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      },
    ],
    addresses: [...(addr ? [{ type: "InternalIP", address: addr }] : []), { type: "Hostname", address: nodeName }],
    nodeInfo: {
      kubeletVersion: VERSION,
      kubeProxyVersion: "",
      containerRuntimeVersion: runtime ? `${runtime.runtimeName}://${runtime.runtimeVersion}` : "",
      kernelVersion: os.release(),
      osImage: "rootless-k8s e2e",
      operatingSystem: "linux",
      architecture: labels["kubernetes.io/arch"],
    },
  };
}

let registered = false;
async function sync() {
  const st = await criConditions();
  if (!st.error && st.conds.find((c) => c.type === "NetworkReady")?.status) await ensureProbePod();
  const status = nodeStatus(st);
  const annotations = {
    "rk8s-double.test/probe-pod-ip": probe.ip,
    "rk8s-double.test/probe-pod-error": probe.error,
    "rk8s-double.test/cgroup-parent": podCgroupParent,
  };
  if (!registered) {
    const body = {
      kind: "Node",
      apiVersion: "v1",
      metadata: { name: nodeName, labels, annotations },
      spec: { taints, ...(f["pod-cidr"] ? { podCIDR: f["pod-cidr"] } : {}) },
      status,
    };
    const r = await api.request("POST", "/api/v1/nodes", body);
    if (r.status === 201 || r.status === 409) {
      registered = true;
      log(C, "I", `Successfully registered node ${nodeName}`);
    } else throw new Error(`Unable to register node with API server: HTTP ${r.status} ${r.json?.message ?? r.text}`);
  }
  const cur = await api.get(`/api/v1/nodes/${nodeName}`);
  if (cur.status !== 200) {
    registered = false;
    throw new Error(`node ${nodeName} not found after registering: HTTP ${cur.status}`);
  }
  const node = cur.json;
  if (Object.entries(annotations).some(([k, v]) => node.metadata.annotations?.[k] !== v)) {
    const a = await api.request("PATCH", `/api/v1/nodes/${nodeName}`, { metadata: { annotations } }, "application/merge-patch+json");
    if (a.status !== 200) throw new Error(`Error updating node annotations: HTTP ${a.status} ${a.json?.message ?? a.text}`);
  }
  node.status = status;
  const r = await api.request("PUT", `/api/v1/nodes/${nodeName}/status`, node);
  if (r.status !== 200) throw new Error(`Error updating node status: HTTP ${r.status} ${r.json?.message ?? r.text}`);
  return status.conditions.find((c) => c.type === "Ready");
}

// healthz (127.0.0.1:10248 by default) and the authenticated port (10250) like the real kubelet.
const healthz = http.createServer((_req, res) => res.end("ok"));
healthz.listen(f["healthz-port"] ?? cfg.healthzPort ?? 10248, f["healthz-bind-address"] ?? cfg.healthzBindAddress ?? "127.0.0.1");
healthz.on("error", (e) => die(C, `failed to start healthz server: ${e.message}`));
let secure = null;
if (cfg.tlsCertFile && cfg.authentication?.x509?.clientCAFile) {
  secure = https.createServer(
    {
      cert: readFileOrDie(C, cfg.tlsCertFile),
      key: readFileOrDie(C, cfg.tlsPrivateKeyFile),
      ca: readFileOrDie(C, cfg.authentication.x509.clientCAFile),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (_req, res) => res.end("ok"),
  );
  secure.listen(f.port ?? cfg.port ?? 10250, f.address ?? cfg.address ?? "0.0.0.0");
  secure.on("error", (e) => die(C, `failed to listen on the kubelet port: ${e.message}`));
}

log(
  C,
  "I",
  `kubelet ${VERSION} (double): node ${nodeName}, runtime ${endpoint}, cgroupDriver ${cgroupDriver}, cgroupsPerQOS ${cgroupsPerQOS}, gates ${JSON.stringify(gates)}`,
);
let lastReady = null;
const period = Number(String(cfg.nodeStatusUpdateFrequency ?? "10s").replace(/s$/, "")) * 1000 || 10_000;
async function loop() {
  try {
    const ready = await sync();
    if (ready.status !== lastReady) log(C, "I", `node ${nodeName} Ready=${ready.status}: ${ready.message}`);
    lastReady = ready.status;
  } catch (e) {
    log(C, "E", e.message);
  }
  setTimeout(loop, lastReady === "True" ? period : 1000);
}
healthz.on("listening", () => notifyReady(C)); // like the kubelet: READY once serving, not once registered
loop();
onStop(C, async () => {
  cri.close();
  healthz.close();
  secure?.close();
});
