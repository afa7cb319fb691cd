// TEST DOUBLE of kube-controller-manager. Installed under the upstream name only inside the e2e
// mirror's archives. Strict flags (real kube-controller-manager flags of v1.36); every file a flag
// names must exist and hold the right thing (signing pair, root CA, service-account key); then it
// authenticates to the API server as system:kube-controller-manager, lists nodes, and stays running.
import { checkKeyFile, checkPair, die, loadCert, log, onStop, parseFlags, requireFlags, VERSION } from "./lib/strict.mjs";
import { watchNodesAs, loadKubeconfig } from "./lib/kube.mjs";
import fields from "./data/k8s-config-fields.json" with { type: "json" };

const C = "kube-controller-manager";
const S = "string",
  B = "bool",
  L = "list",
  I = "int";
// Reference: kubernetes/website .../command-line-tools-reference/kube-controller-manager.md
const FLAGS = {
  kubeconfig: S,
  "authentication-kubeconfig": S,
  "authorization-kubeconfig": S,
  "bind-address": S,
  "secure-port": I,
  "cluster-cidr": S,
  "allocate-node-cidrs": B,
  "cluster-name": S,
  "cluster-signing-cert-file": S,
  "cluster-signing-key-file": S,
  "cluster-signing-duration": S,
  controllers: L,
  "leader-elect": B,
  "root-ca-file": S,
  "service-account-private-key-file": S,
  "service-cluster-ip-range": S,
  "use-service-account-credentials": B,
  "node-cidr-mask-size": I,
  "requestheader-client-ca-file": S,
  "client-ca-file": S,
  "feature-gates": L,
  v: I,
  vmodule: L,
  "tls-cert-file": S,
  "tls-private-key-file": S,
  "configure-cloud-routes": B,
  profiling: B,
  "kube-api-qps": S,
  "kube-api-burst": I,
  "node-monitor-grace-period": S,
  "terminated-pod-gc-threshold": I,
  "logging-format": S,
  "log-flush-frequency": S,
  "cloud-provider": S,
};
const f = parseFlags(C, FLAGS);
requireFlags(C, f, ["kubeconfig", "service-account-private-key-file", "root-ca-file"]);
for (const g of f["feature-gates"] ?? [])
  if (!fields.featureGates.includes(g.split("=")[0])) die(C, `unrecognized feature gate: ${g.split("=")[0]}`);
loadCert(C, f["root-ca-file"], "root-ca-file");
checkKeyFile(C, f["service-account-private-key-file"], "service-account-private-key-file");
if (f["cluster-signing-cert-file"] || f["cluster-signing-key-file"])
  checkPair(C, f["cluster-signing-cert-file"], f["cluster-signing-key-file"], "cluster signing");
for (const k of ["authentication-kubeconfig", "authorization-kubeconfig"]) if (f[k]) loadKubeconfig(C, f[k]);
if (f["client-ca-file"]) loadCert(C, f["client-ca-file"], "client-ca-file");
if (f["allocate-node-cidrs"] && !f["cluster-cidr"]) die(C, "--allocate-node-cidrs needs --cluster-cidr");
if (f["tls-cert-file"]) checkPair(C, f["tls-cert-file"], f["tls-private-key-file"], "serving");
log(C, "I", `kube-controller-manager ${VERSION} (double) starting`);
await watchNodesAs(C, f.kubeconfig, "system:kube-controller-manager");
onStop(C);
