// The command line of every Kubernetes component, from the plan. Components with a config file
// (kubelet, kube-proxy) get only the flags that have no config field.
import * as path from "node:path";
import { advertisedIP } from "../plan/node";
import { nodePortsOf, rangeText } from "../plan/node-ports";
import { NODE_CIDR_MASK } from "../plan/network";
import type { Plan } from "../plan/plan";
import { layout } from "./layout";
import { FRONT_PROXY_CLIENT, pkiPaths } from "./pki";
import { hasAuthenticationConfig } from "./authentication";

export type Component = "etcd" | "kube-apiserver" | "kube-controller-manager" | "kube-scheduler" | "kubelet" | "kube-proxy" | "cri-dockerd";

export const CLUSTER_NAME = "rootless-k8s";
export const SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";

const bin = (plan: Plan, name: string) => path.join(plan.paths.binDir, name);

export function etcdArgs(plan: Plan): string[] {
  const pki = pkiPaths(plan);
  const client = `https://127.0.0.1:${plan.ports.etcdClient}`;
  const peer = `https://127.0.0.1:${plan.ports.etcdPeer}`;
  return [
    bin(plan, "etcd"),
    `--name=${plan.node.name}`,
    `--data-dir=${layout(plan).data.etcd}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=${plan.node.name}=${peer}`,
    "--initial-cluster-state=new",
    `--cert-file=${pki.certs.etcdServer.cert}`,
    `--key-file=${pki.certs.etcdServer.key}`,
    `--trusted-ca-file=${pki.cas.etcdCa.cert}`,
    "--client-cert-auth=true",
    `--peer-cert-file=${pki.certs.etcdServer.cert}`,
    `--peer-key-file=${pki.certs.etcdServer.key}`,
    `--peer-trusted-ca-file=${pki.cas.etcdCa.cert}`,
    "--peer-client-cert-auth=true",
  ];
}

export function apiServerArgs(plan: Plan): string[] {
  const pki = pkiPaths(plan);
  return [
    bin(plan, "kube-apiserver"),
    // The `kubernetes` Service's endpoint: pods of other hosts reach it at a host address (--node-ip).
    `--advertise-address=${advertisedIP(plan)}`,
    "--bind-address=0.0.0.0",
    `--secure-port=${plan.ports.apiServer}`,
    "--allow-privileged=true",
    "--authorization-mode=Node,RBAC",
    "--enable-admission-plugins=NodeRestriction",
    // Bootstrap tokens (`rootless-k8s token create`): a joining host's kubelet asks for its certificate with one.
    "--enable-bootstrap-token-auth=true",
    `--client-ca-file=${pki.cas.ca.cert}`,
    // Anonymous requests on the health endpoints and cluster-info only (cli/render/authentication.ts).
    ...(hasAuthenticationConfig(plan) ? [`--authentication-config=${layout(plan).authenticationConfig}`] : []),
    `--tls-cert-file=${pki.certs.apiServer.cert}`,
    `--tls-private-key-file=${pki.certs.apiServer.key}`,
    `--etcd-servers=https://127.0.0.1:${plan.ports.etcdClient}`,
    `--etcd-cafile=${pki.cas.etcdCa.cert}`,
    `--etcd-certfile=${pki.certs.apiServerEtcdClient.cert}`,
    `--etcd-keyfile=${pki.certs.apiServerEtcdClient.key}`,
    `--kubelet-certificate-authority=${pki.cas.ca.cert}`,
    `--kubelet-client-certificate=${pki.certs.apiServerKubeletClient.cert}`,
    `--kubelet-client-key=${pki.certs.apiServerKubeletClient.key}`,
    "--kubelet-preferred-address-types=InternalIP,Hostname",
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${pki.serviceAccount.publicKey}`,
    `--service-account-signing-key-file=${pki.serviceAccount.privateKey}`,
    `--service-cluster-ip-range=${plan.cidrs.services}`,
    `--service-node-port-range=${rangeText(nodePortsOf(plan))}`,
    // The aggregation layer (metrics-server and other extension API servers), as kubeadm sets it.
    `--requestheader-client-ca-file=${pki.cas.frontProxyCa.cert}`,
    `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
    "--requestheader-username-headers=X-Remote-User",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    `--proxy-client-cert-file=${pki.certs.frontProxyClient.cert}`,
    `--proxy-client-key-file=${pki.certs.frontProxyClient.key}`,
    // The API server reaches an extension server at its endpoints' IPs, not through the Service's
    // cluster IP: it does not depend on kube-proxy's rules being in place.
    "--enable-aggregator-routing=true",
    // A bounded stop (issue 41). By default the server's http.Server.Shutdown waits up to
    // --request-timeout (60 s) for every connection to go idle, and a stop or restart took 60 s
    // whenever one stayed busy ("Failed to shutdown server: context deadline exceeded", then the
    // watch caches end). With retry-after, requests in flight drain first (new ones get 429 and
    // Retry-After), and Shutdown itself is given 2 s (k8s.io/apiserver genericapiserver.go); watches
    // end as the drain begins instead of holding their connections open. Nothing is lost: a node has
    // one API server, every client retries, and its state is in etcd.
    "--shutdown-send-retry-after=true",
    "--shutdown-watch-termination-grace-period=5s",
  ];
}

export function controllerManagerArgs(plan: Plan): string[] {
  const pki = pkiPaths(plan);
  const kubeconfig = layout(plan).kubeconfigs.controllerManager;
  return [
    bin(plan, "kube-controller-manager"),
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${plan.ports.controllerManager}`,
    `--cluster-name=${CLUSTER_NAME}`,
    `--cluster-signing-cert-file=${pki.cas.ca.cert}`,
    `--cluster-signing-key-file=${pki.cas.ca.key}`,
    `--root-ca-file=${pki.cas.ca.cert}`,
    `--service-account-private-key-file=${pki.serviceAccount.privateKey}`,
    `--service-cluster-ip-range=${plan.cidrs.services}`,
    "--use-service-account-credentials=true",
    // The two controllers of bootstrap tokens, off by default: bootstrapsigner signs cluster-info
    // with each token, tokencleaner deletes a token once it expires (kubeadm turns both on).
    "--controllers=*,bootstrapsigner,tokencleaner",
    // Each node gets a /24 of the pod network (spec.podCIDR): a worker's pods take their addresses from it.
    "--allocate-node-cidrs=true",
    `--cluster-cidr=${plan.cidrs.pods}`,
    `--node-cidr-mask-size=${NODE_CIDR_MASK}`,
    "--leader-elect=false",
  ];
}

export function schedulerArgs(plan: Plan): string[] {
  const kubeconfig = layout(plan).kubeconfigs.scheduler;
  return [
    bin(plan, "kube-scheduler"),
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${plan.ports.scheduler}`,
    // With leader election the scheduler exits 0 on SIGTERM ("Requested to terminate, exiting");
    // without it, it returns "finished without leader elect" as an error and exits 1 on every stop
    // (issue 41), and it releases its Lease (kube-system/kube-scheduler) as it goes. A node has no
    // other scheduler to hand over to, so the Lease is held through an API server that stalls for
    // up to 40 s (upstream's 10 s made it exit 1, "Leaderelection lost", during a slow start under
    // software emulation); after a crash the next one waits at most 60 s for the old Lease.
    "--leader-elect=true",
    "--leader-elect-lease-duration=60s",
    "--leader-elect-renew-deadline=40s",
    "--leader-elect-retry-period=5s",
  ];
}

export function kubeletArgs(plan: Plan): string[] {
  const l = layout(plan);
  const labels = Object.entries(plan.node.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  // A worker's kubelet gets its client certificate through TLS bootstrap (the join token's
  // kubeconfig), writes its own kubeconfig, and advertises the host's address.
  const join = plan.join;
  return [
    bin(plan, "kubelet"),
    `--config=${l.kubeletConfig}`,
    `--kubeconfig=${l.kubeconfigs.kubelet}`,
    ...(join ? [`--bootstrap-kubeconfig=${l.kubeconfigs.kubeletBootstrap}`, `--cert-dir=${l.kubeletCertDir}`] : []),
    `--hostname-override=${plan.node.name}`,
    `--node-ip=${advertisedIP(plan)}`,
    `--node-labels=${labels}`,
    // Inside dockerd's namespaces /var/lib is the host's: keep the kubelet's state in our data.
    ...(plan.runtime.name === "docker" ? [`--root-dir=${l.data.kubelet}`] : []),
  ];
}

export function kubeProxyArgs(plan: Plan): string[] {
  return [bin(plan, "kube-proxy"), `--config=${layout(plan).kubeProxyConfig}`];
}

/** cri-dockerd, inside dockerd's namespaces, serving CRI on our socket for the user's dockerd. */
export function criDockerdArgs(plan: Plan): string[] {
  const l = layout(plan);
  const docker = plan.runtime.docker;
  if (!docker) throw new Error("cri-dockerd is only for the docker runtime");
  return [
    plan.runtime.binary,
    `--container-runtime-endpoint=unix://${plan.runtime.criSocket}`,
    `--docker-endpoint=unix://${docker.socket}`,
    `--cri-dockerd-root-directory=${l.data.criDockerd}`,
    "--network-plugin=cni",
    `--cni-bin-dir=${layout(plan).cniBinDir}`,
    `--cni-conf-dir=${l.cniConfDir}`,
    `--cni-cache-dir=${path.join(l.data.cni, "cache")}`,
  ];
}
