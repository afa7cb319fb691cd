// Where each rendered file and each data folder of a plan lives. Every renderer takes its paths
// from here, so a file is named in exactly one place.
import * as path from "node:path";
import type { Plan } from "../plan/plan";

export function layout(plan: Plan) {
  const { configDir, dataDir, runtimeDir, libexecDir, pkiDir } = plan.paths;
  const config = (...p: string[]) => path.join(configDir, ...p);
  const data = (...p: string[]) => path.join(dataDir, ...p);
  return {
    kubeletConfig: config("kubelet-config.yaml"),
    kubeProxyConfig: config("kube-proxy-config.yaml"),
    /** The API server's --authentication-config (anonymous requests on the health endpoints only). */
    authenticationConfig: config("authentication-config.yaml"),
    containerdConfig: config("containerd", "config.toml"),
    crioConfig: config("crio", "crio.conf"),
    crioPolicy: config("crio", "policy.json"),
    cniConfDir: config("cni"),
    /** CNI plugins: the manifest installs them in bin/cni of each version set. */
    cniBinDir: path.join(plan.paths.binDir, "cni"),
    cniConflist: config("cni", "10-rootless-k8s.conflist"),
    /** The port publisher's config (`rootless-k8s ports run --config FILE`). */
    portsConfig: config("ports.json"),
    /** The overlay agent's config (`rootless-k8s overlay run --config FILE`). */
    overlayConfig: config("overlay.json"),
    /** The NetworkPolicy enforcer's config (`rootless-k8s netpol run --config FILE`). */
    networkPolicyConfig: config("netpol.json"),
    /** What each add-on applies through the API server, for the user to read (addons/<id>.yaml). */
    addonsDir: config("addons"),
    kubeconfigs: {
      admin: plan.paths.adminKubeconfig,
      kubelet: config("kubelet.kubeconfig"),
      controllerManager: config("controller-manager.kubeconfig"),
      scheduler: config("scheduler.kubeconfig"),
      kubeProxy: config("kube-proxy.kubeconfig"),
      ports: config("ports.kubeconfig"),
      csrApprover: config("csr-approver.kubeconfig"),
      /** A worker's kubelet, until TLS bootstrap gave it a certificate: the join token (0600; removed once the node is Ready). */
      kubeletBootstrap: config("kubelet-bootstrap.kubeconfig"),
    },
    /** A worker's kubelet keeps the certificates it got through TLS bootstrap here (and rotates them). */
    kubeletCertDir: path.join(pkiDir, "kubelet"),
    scripts: {
      /** RootlessKit's child: prepares the mount namespace, then runs the runtime. */
      child: path.join(libexecDir, "rootless-k8s-child"),
      /** Runs a command inside the node's namespaces (nsenter with RootlessKit's child pid). */
      enter: path.join(libexecDir, "rootless-k8s-enter"),
      /** docker runtime: publishes the API port through dockerd's RootlessKit. */
      publish: path.join(libexecDir, "rootless-k8s-publish"),
      /** docker runtime: the kubelet's own mount namespace under dockerd's (its own /var/lib). */
      kubeletNs: path.join(libexecDir, "rootless-k8s-kubelet-ns"),
      /** The owner unit's watch on the network driver RootlessKit started (slirp4netns, pasta). */
      netwatch: path.join(libexecDir, "rootless-k8s-netwatch"),
      /** containerd 2 in mode none: crun with --cgroup-manager=disabled, as the shim's BinaryName. */
      ociRuntime: path.join(libexecDir, "rootless-k8s-oci-runtime"),
    },
    data: {
      etcd: data("etcd"),
      /** The Kubernetes version whose bootstrap hooks this etcd's data has passed (cli/readiness/bootstrap.ts). */
      bootstrapMarker: data("bootstrapped"),
      kubelet: data("kubelet"),
      kubeletPlugins: data("kubelet-plugins"),
      cni: data("cni"),
      log: data("log"),
      containerd: data("containerd"),
      crio: data("crio"),
      criDockerd: data("cri-dockerd"),
    },
    run: {
      containerd: path.join(runtimeDir, "containerd"),
      crio: path.join(runtimeDir, "crio"),
      /** docker runtime: where the kubelet's mount namespace keeps dockerd's /var/lib under its own. */
      kubeletHostVarLib: path.join(runtimeDir, "kubelet-host-var-lib"),
      /** What the port publisher published, skipped and could not publish (read by `status`). */
      portsState: path.join(runtimeDir, "ports-state.json"),
      /** The overlay's peers and whether each answered through it (read by join and status). */
      overlayState: path.join(runtimeDir, "overlay-state.json"),
      /** Whether the NetworkPolicy enforcer's last pass holds, and what it enforces (read by status). */
      networkPolicyState: path.join(runtimeDir, "netpol-state.json"),
    },
    pkiDir,
  };
}

export type Layout = ReturnType<typeof layout>;

/** Folders to create before writing, with their modes: secrets 0700, the rest 0755. */
export function folders(plan: Plan): { path: string; mode: number }[] {
  const l = layout(plan);
  const p = plan.paths;
  // etcd refuses to share its data: 0700 like the secrets. The sockets' and pid files' folder is the
  // user's alone (RootlessKit's API socket, child_pid, the runtime's socket): 0700 too.
  const secret = [p.configDir, p.pkiDir, p.runtimeDir, ...(plan.role === "worker" ? [] : [l.data.etcd])];
  // Volumes (the storage add-on): only the user (root in the node's user namespace) goes through.
  if (plan.addons?.storage?.enabled) secret.push(plan.addons.storage.path);
  const open = [p.shareDir, p.versionsDir, p.libexecDir, p.dataDir, p.unitDir, l.cniConfDir, l.addonsDir];
  open.push(l.data.kubelet, l.data.kubeletPlugins, l.data.cni, l.data.log);
  if (plan.logging.to === "file") open.push(p.logDir);
  if (plan.runtime.name === "containerd") open.push(path.dirname(l.containerdConfig), l.data.containerd, l.run.containerd);
  if (plan.runtime.name === "crio") open.push(path.dirname(l.crioConfig), l.data.crio, l.run.crio);
  if (plan.runtime.name === "docker") open.push(l.data.criDockerd);
  return [...secret.map((d) => ({ path: d, mode: 0o700 })), ...[...new Set(open)].map((d) => ({ path: d, mode: 0o755 }))];
}
