// TEST DOUBLE of kube-proxy. Installed under the upstream name only inside the e2e mirror's
// archives. Strict flags (real kube-proxy flags of v1.36) and a strictly decoded
// KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1, fields from data/k8s-config-fields.json).
// Like the real one inside a user namespace, it dies when told to write conntrack sysctls it cannot
// write; it programs its base chain with the real iptables/nft of the namespace; then it
// authenticates as system:kube-proxy, lists nodes, and stays running.
import { readFileSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { parse } from "yaml";
import { unknownFeatureGates, unknownFields } from "./lib/config-fields.mjs";
import { die, log, onStop, parseFlags, readFileOrDie, VERSION } from "./lib/strict.mjs";
import { watchNodesAs } from "./lib/kube.mjs";

const C = "kube-proxy";
const S = "string",
  B = "bool",
  L = "list",
  I = "int";
// Reference: kubernetes/website .../command-line-tools-reference/kube-proxy.md
const FLAGS = {
  config: S,
  kubeconfig: S,
  "hostname-override": S,
  v: I,
  vmodule: L,
  "cluster-cidr": S,
  "proxy-mode": S,
  "conntrack-max-per-core": I,
  "conntrack-tcp-timeout-established": S,
  "conntrack-tcp-timeout-close-wait": S,
  "feature-gates": L,
  "bind-address": S,
  "healthz-bind-address": S,
  "metrics-bind-address": S,
  "nodeport-addresses": L,
  "logging-format": S,
  "log-flush-frequency": S,
  "init-only": B,
  cleanup: B,
};
const f = parseFlags(C, FLAGS);
let cfg = {};
if (f.config) {
  try {
    cfg = parse(readFileOrDie(C, f.config, "config file").toString("utf8"));
  } catch (e) {
    die(C, `failed to load config ${f.config}: ${e.message}`);
  }
  if (cfg?.apiVersion !== "kubeproxy.config.k8s.io/v1alpha1" || cfg?.kind !== "KubeProxyConfiguration")
    die(C, `${f.config}: no kind "${cfg?.kind}" is registered for version "${cfg?.apiVersion}"`);
  const bad = unknownFields(cfg, "KubeProxyConfiguration");
  if (bad.length) die(C, `failed to load config ${f.config}: strict decoding error: ${bad.map((b) => `unknown field "${b}"`).join(", ")}`);
  const gates = unknownFeatureGates(cfg.featureGates);
  if (gates.length) die(C, `unrecognized feature gate: ${gates[0]}`);
}
const mode = f["proxy-mode"] ?? cfg.mode ?? "iptables";
if (!["iptables", "nftables", "ipvs"].includes(mode || "iptables")) die(C, `invalid proxy mode "${mode}"`);

// conntrack sysctls: the real kube-proxy writes them unless they are 0, and cannot inside a user namespace.
const ct = cfg.conntrack ?? {};
const maxPerCore = f["conntrack-max-per-core"] ?? ct.maxPerCore ?? 32768;
// Like the real one, it writes the value (here: the current one back, which changes nothing).
const sysctl = (name) => {
  const file = `/proc/sys/${name}`;
  try {
    writeFileSync(file, readFileSync(file, "utf8"));
  } catch (e) {
    die(
      C,
      `Error running ProxyServer: open ${file}: ${e.code === "EACCES" || e.code === "EPERM" || e.code === "EROFS" ? "permission denied" : e.message} (set conntrack.${name.endsWith("max") ? "maxPerCore" : "timeouts"} to 0 when rootless)`,
    );
  }
};
if (maxPerCore !== 0) sysctl("net/netfilter/nf_conntrack_max");
const est = f["conntrack-tcp-timeout-established"] ?? ct.tcpEstablishedTimeout ?? "24h0m0s";
if (!/^0(s|m|h)?$/.test(String(est))) sysctl("net/netfilter/nf_conntrack_tcp_timeout_established");
const cw = f["conntrack-tcp-timeout-close-wait"] ?? ct.tcpCloseWaitTimeout ?? "1h0m0s";
if (!/^0(s|m|h)?$/.test(String(cw))) sysctl("net/netfilter/nf_conntrack_tcp_timeout_close_wait");

// Program the base chain, as kube-proxy does on start.
try {
  if (mode === "nftables") execFileSync("nft", ["add", "table", "ip", "kube-proxy"], { stdio: "pipe" });
  else {
    const have = execFileSync("iptables", ["-w", "5", "-t", "nat", "-S"], { encoding: "utf8", stdio: "pipe" });
    if (!have.includes("-N KUBE-SERVICES")) execFileSync("iptables", ["-w", "5", "-t", "nat", "-N", "KUBE-SERVICES"], { stdio: "pipe" });
  }
} catch (e) {
  die(
    C,
    `failed to program ${mode} rules: ${
      String(e.stderr ?? e.message)
        .trim()
        .split("\n")[0]
    }`,
  );
}
const kubeconfig = f.kubeconfig ?? cfg.clientConnection?.kubeconfig;
if (!kubeconfig) die(C, "no kubeconfig (neither --kubeconfig nor clientConnection.kubeconfig)");
log(C, "I", `kube-proxy ${VERSION} (double) in ${mode} mode, conntrack maxPerCore=${maxPerCore}`);
await watchNodesAs(C, kubeconfig, "system:kube-proxy");
onStop(C);
