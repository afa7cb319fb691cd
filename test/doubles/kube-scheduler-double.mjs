// TEST DOUBLE of kube-scheduler. Installed under the upstream name only inside the e2e mirror's
// archives. Strict flags (real kube-scheduler flags of v1.36) and a strictly read
// KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); then it authenticates to the API
// server as system:kube-scheduler, lists nodes, and stays running.
import { parse } from "yaml";
import { die, log, onStop, parseFlags, readFileOrDie, unknownKeys, VERSION } from "./lib/strict.mjs";
import { watchNodesAs, loadKubeconfig } from "./lib/kube.mjs";
import fields from "./data/k8s-config-fields.json" with { type: "json" };

const C = "kube-scheduler";
const S = "string",
  B = "bool",
  L = "list",
  I = "int";
// Reference: kubernetes/website .../command-line-tools-reference/kube-scheduler.md
const FLAGS = {
  config: S,
  kubeconfig: S,
  "authentication-kubeconfig": S,
  "authorization-kubeconfig": S,
  "bind-address": S,
  "secure-port": I,
  "leader-elect": B,
  "feature-gates": L,
  v: I,
  vmodule: L,
  "logging-format": S,
  "log-flush-frequency": S,
  "tls-cert-file": S,
  "tls-private-key-file": S,
  profiling: B,
  "client-ca-file": S,
  "requestheader-client-ca-file": S,
};
// KubeSchedulerConfiguration v1 (k8s.io/kube-scheduler/config/v1 types.go), top level and the two nested structs read here.
const TOP = [
  "apiVersion",
  "kind",
  "parallelism",
  "leaderElection",
  "clientConnection",
  "enableProfiling",
  "enableContentionProfiling",
  "percentageOfNodesToScore",
  "podInitialBackoffSeconds",
  "podMaxBackoffSeconds",
  "profiles",
  "extenders",
  "delayCacheUntilActive",
];
const CLIENT = ["kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"];
const LEADER = ["leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock", "resourceName", "resourceNamespace"];

const f = parseFlags(C, FLAGS);
for (const g of f["feature-gates"] ?? [])
  if (!fields.featureGates.includes(g.split("=")[0])) die(C, `unrecognized feature gate: ${g.split("=")[0]}`);
let kubeconfig = f.kubeconfig;
if (f.config) {
  let cfg;
  try {
    cfg = parse(readFileOrDie(C, f.config, "config file").toString("utf8"));
  } catch (e) {
    die(C, `couldn't decode ${f.config}: ${e.message}`);
  }
  if (cfg?.apiVersion !== "kubescheduler.config.k8s.io/v1" || cfg?.kind !== "KubeSchedulerConfiguration")
    die(C, `${f.config}: no kind "${cfg?.kind}" is registered for version "${cfg?.apiVersion}"`);
  const bad = [
    ...unknownKeys(cfg, TOP, ""),
    ...unknownKeys(cfg.clientConnection, CLIENT, "clientConnection."),
    ...unknownKeys(cfg.leaderElection, LEADER, "leaderElection."),
  ];
  if (bad.length) die(C, `${f.config}: strict decoding error: ${bad.map((b) => `unknown field "${b}"`).join(", ")}`);
  kubeconfig = cfg.clientConnection?.kubeconfig ?? kubeconfig;
}
if (!kubeconfig) die(C, "no kubeconfig (neither --kubeconfig nor clientConnection.kubeconfig)");
for (const k of ["authentication-kubeconfig", "authorization-kubeconfig"]) if (f[k]) loadKubeconfig(C, f[k]);
log(C, "I", `kube-scheduler ${VERSION} (double) starting`);
await watchNodesAs(C, kubeconfig, "system:kube-scheduler");
onStop(C);
