// `doctor --join`: can this host join the control plane on the join line? Pure functions of what
// cli/host/join-facts.ts reads: the server reached, cluster-info published, the CA matching
// the pin, the token signed and accepted, the server's certificate naming the address, the node
// name free. Each failure says what to do on which host.
import { caHashOrNull, clusterOfKubeconfig, jwsProblem } from "../../host/parse/bootstrap-token";
import type { JoinFacts } from "../../host/join-facts";
import { VXLAN } from "../../host/probes/overlay";
import { fail, ok, skip, warn, type Check } from "../check";

/** Root's fix for a module the overlay needs: load it now and at every boot (its own file, beside kernel-modules'). */
const overlayModuleFix = (m: string) => [`echo ${m} > /etc/modules-load.d/rootless-k8s-${m}.conf`, `modprobe ${m}`];

const ON_CONTROL_PLANE = "on the control plane: rootless-k8s token create  (prints a new join line)";

export const joinChecks: Check<JoinFacts>[] = [
  {
    id: "join-reach",
    group: "join",
    label: "API server",
    run: (j) => {
      if (j.reach.error !== null)
        return fail(`cannot reach ${j.server}: ${j.reach.error}`, {
          user: [
            `check the address, and that TCP port ${new URL(j.server).port || 443} of that host is open to this one`,
            "on the control plane: rootless-k8s status  (is its API server up?)",
          ],
        });
      return ok(`${j.server} answers TLS (${j.reach.chain.length} certificate${j.reach.chain.length === 1 ? "" : "s"} presented)`);
    },
  },
  {
    id: "join-cluster-info",
    group: "join",
    label: "cluster-info",
    run: (j) => {
      const c = j.clusterInfo;
      if (!c) return skip("the API server was not reached");
      if (c.status === 200 && c.kubeconfig && clusterOfKubeconfig(c.kubeconfig))
        return ok("kube-public/cluster-info is published (the CA and the server)");
      if (c.status === 200)
        return fail("kube-public/cluster-info holds no kubeconfig with a server and a CA", { user: [ON_CONTROL_PLANE] });
      return fail(
        `kube-public/cluster-info cannot be read without credentials (${c.status ? `HTTP ${c.status}: ` : ""}${c.message}): is this a rootless-k8s control plane?`,
        { user: [ON_CONTROL_PLANE] },
      );
    },
  },
  {
    id: "join-ca-hash",
    group: "join",
    label: "CA pin",
    run: (j) => {
      const cluster = j.clusterInfo?.kubeconfig ? clusterOfKubeconfig(j.clusterInfo.kubeconfig) : null;
      if (!cluster) return skip("no CA to compare: cluster-info was not read");
      const got = caHashOrNull(cluster.caPem);
      if (got === j.caHash) return ok(`the cluster's CA matches ${j.caHash.slice(0, 19)}…`);
      return fail(
        `the cluster's CA hashes to ${got ?? "nothing (no certificate)"}, not the --ca-hash given: another server may answer at this address`,
        { user: ["copy the join line again, whole, from the control plane: rootless-k8s token create"] },
      );
    },
  },
  {
    id: "join-token",
    group: "join",
    label: "token",
    run: (j) => {
      const c = j.clusterInfo;
      if (!c?.kubeconfig) return skip("cluster-info was not read");
      if (!c.signature)
        return fail(`cluster-info carries no signature for token ${j.token.id}: the token is unknown, expired or deleted`, {
          user: [ON_CONTROL_PLANE],
        });
      const problem = jwsProblem(c.signature, c.kubeconfig, j.token);
      if (problem) return fail(`token ${j.token.id} does not match the cluster's: ${problem}`, { user: [ON_CONTROL_PLANE] });
      const auth = j.trusted?.auth;
      if (!auth) return skip(`token ${j.token.id} signs cluster-info; not sent to the server: the CA pin does not hold`);
      if (auth.status !== 201)
        return fail(`the API server refuses token ${j.token.id} (HTTP ${auth.status}: ${auth.message}); it may just have expired`, {
          user: [ON_CONTROL_PLANE],
        });
      return ok(`token ${j.token.id} is valid: the API server takes it for ${auth.user} (${auth.groups.join(", ")})`);
    },
  },
  {
    id: "join-server-certificate",
    group: "join",
    label: "server certificate",
    run: (j) => {
      if (!j.trusted) return skip("not checked: the CA pin or the token does not hold");
      if (j.trusted.tlsError === null) return ok(`issued by the cluster's CA, for ${new URL(j.server).hostname}`);
      return fail(`the API server's certificate does not hold for ${j.server}: ${j.trusted.tlsError}`, {
        user: [
          "join through an address its certificate names: on the control plane, `rootless-k8s install --dry-run` lists them (API server names)",
        ],
      });
    },
  },
  {
    id: "join-node-name",
    group: "join",
    label: "node name",
    run: (j) => {
      const n = j.trusted?.node;
      if (!n) return skip("not checked: the token was not accepted");
      if (n.status === 404) return ok(`no node named ${j.nodeName} in the cluster yet`);
      if (n.status === 200)
        return fail(`a node named ${j.nodeName} is already in the cluster`, {
          user: ["join with --node-name OTHER-NAME, or remove that node first (on its host: rootless-k8s uninstall)"],
        });
      return warn(`could not see whether ${j.nodeName} is taken (HTTP ${n.status}: ${n.message})`, {
        user: ["on the control plane: rootless-k8s token create  (it grants joiners the right to look)"],
      });
    },
  },
  {
    id: "join-cluster",
    group: "join",
    label: "cluster parameters",
    run: (j) => {
      const c = j.trusted?.cluster;
      if (!c) return skip("not checked: the token was not accepted");
      if (c.parameters)
        return ok(
          `Kubernetes ${c.parameters.kubernetes}; pods ${c.parameters.pods}, services ${c.parameters.services}${c.parameters.dns ? `, DNS ${c.parameters.dns.serviceIP}` : ", no cluster DNS"}`,
        );
      return fail(
        c.status === 200
          ? "the control plane's cluster parameters cannot be read (not what rootless-k8s writes)"
          : `the control plane publishes no cluster parameters (HTTP ${c.status}${c.message ? `: ${c.message}` : ""}): it predates joins of whole nodes`,
        { user: ["on the control plane: rootless-k8s install  (the same version, to update it), then rootless-k8s token create"] },
      );
    },
  },
  {
    id: "join-vxlan",
    group: "join",
    label: "vxlan module",
    run: (j) => {
      const s = j.overlay.vxlan;
      if (s === "loaded" || s === "builtin")
        return ok(`${s === "builtin" ? "built into the kernel" : "loaded"}: the node's namespace can make its VXLAN device`);
      if (s === "unknown")
        return warn("cannot tell whether the kernel has vxlan (no /proc/modules, modules.builtin or /sys/module/vxlan)", {
          root: overlayModuleFix("vxlan"),
        });
      if (s === "available")
        return warn(
          "vxlan is not loaded: the kernel loads it on demand when the node makes its device, unless module autoloading is off; to be sure, root loads it",
          { root: overlayModuleFix("vxlan") },
        );
      return fail("this kernel has no vxlan module: the pod network across hosts needs its device", {
        root: ["install the kernel's extra modules (Ubuntu: apt-get install linux-modules-extra-$(uname -r)), then: modprobe vxlan"],
      });
    },
  },
  {
    id: "join-br-netfilter",
    group: "join",
    label: "br_netfilter module",
    run: (j) => {
      const s = j.overlay.brNetfilter;
      if (s === "loaded" || s === "builtin") return ok(s === "builtin" ? "built into the kernel" : "loaded");
      return warn(
        `${s === "unknown" ? "cannot tell whether it is loaded" : "not loaded"}: not needed (kube-proxy masquerades Service traffic, masqueradeAll), but pods then see the bridge's address as the source of Service connections`,
        { root: overlayModuleFix("br_netfilter") },
      );
    },
  },
  {
    id: "join-rp-filter",
    group: "join",
    label: "rp_filter",
    run: (j) => {
      const { all, default: def } = j.overlay.rpFilter;
      if (all === null || def === null)
        return warn(
          "net.ipv4.conf.{all,default}.rp_filter cannot be read: the overlay sets loose filtering (2) on its device all the same",
        );
      const words = (v: number) => (v === 0 ? "off" : v === 1 ? "strict" : "loose");
      return ok(
        `the host's all=${all} (${words(all)}), default=${def} (${words(def)}): compatible, the overlay sets loose filtering (2, as usernetes needs) on its device inside the node's namespace, where the higher of all and the device's counts`,
      );
    },
  },
  {
    id: "join-vxlan-port",
    group: "join",
    label: `UDP port ${VXLAN.port}`,
    run: (j) => {
      if (!j.overlay.boundUdpPorts.includes(VXLAN.port))
        return ok(`free: the overlay publishes it on this host once the cluster has another node`);
      return fail(`UDP port ${VXLAN.port} (VXLAN) is taken on this host: another overlay (flannel, a Kubernetes of root) holds it`, {
        user: [`see who: ss -ulpn 'sport = :${VXLAN.port}'; stop it, or join from another host`],
      });
    },
  },
];
