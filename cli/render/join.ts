// What a control plane serves to a host that joins it, as kubeadm sets it up
// (cmd/kubeadm/app/phases/bootstraptoken, .../clusterinfo): the cluster-info kubeconfig in
// kube-public that anyone may read (the CA and the server, nothing secret), the RBAC that lets a
// bootstrap token's holder ask for a kubelet client certificate and get it approved, a node renew
// its own, and a joiner see whether its node name is taken; a bootstrap token's Secret; the line a
// user copies to the other host. Pure data from the plan, the CA and the time.
import YAML from "yaml";
import { CLUSTER_INFO, type BootstrapToken, NODE_TOKEN_GROUP, TOKEN_SECRET_PREFIX, TOKEN_SECRET_TYPE } from "../host/parse/bootstrap-token";
import type { Plan } from "../plan/plan";
import { CLUSTER_PARAMETERS, type ClusterParameters } from "../plan/worker";
import { CLUSTER_NAME } from "./components";
import { type KubeObject, rbacBinding } from "./kube-objects";

/** Every join object carries this label (as the add-ons carry theirs). */
export const JOIN_LABEL = "rootless-k8s.io/join";
const labels = { [JOIN_LABEL]: "true" };
const group = (name: string) => ({ apiGroup: "rbac.authorization.k8s.io", kind: "Group" as const, name });

/**
 * The URL another host reaches this API server at: `override` (--server), else the address the
 * node advertises (install --node-ip), else the host's first address that is not loopback, on the port RootlessKit publishes; null when the host has none.
 */
export function joinServerUrl(plan: Plan, override?: string): string | null {
  if (override) return override;
  const address = plan.node.ip ?? plan.pki.hostAddresses[0];
  if (!address) return null;
  const port = plan.network.published.find((p) => p.namespacePort === plan.ports.apiServer)?.hostPort ?? plan.ports.apiServer;
  return `https://${address.includes(":") ? `[${address}]` : address}:${port}`;
}

/** cluster-info's kubeconfig: one cluster (the server and the CA), no user; the text the bootstrapsigner signs. */
export function clusterInfoKubeconfig(server: string, caPem: string): string {
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: CLUSTER_NAME, cluster: { server, "certificate-authority-data": Buffer.from(caPem).toString("base64") } }],
    contexts: [],
    "current-context": "",
    preferences: {},
    users: [],
  };
  return YAML.stringify(doc, { lineWidth: 0 });
}

/** What every worker of this control plane must share with it (the ConfigMap `join` reads). */
export function clusterParameters(plan: Plan): ClusterParameters {
  const dns = plan.addons?.dns;
  return {
    pods: plan.cidrs.pods,
    services: plan.cidrs.services,
    firstServiceIP: plan.cidrs.firstServiceIP,
    dns: dns?.enabled ? { serviceIP: dns.serviceIP, domain: dns.domain } : null,
    kubernetes: plan.versions.components.kubernetes ?? "",
  };
}

/** The RBAC that lets nodes delete Nodes (NodeRestriction keeps each to its own). */
export const NODE_SELF_DELETE = "rootless-k8s:node-self-delete";

/** The objects a control plane needs before any host can join it, in the order they are applied. */
export function joinObjects(plan: Plan, server: string, caPem: string): KubeObject[] {
  const bindGroup = (name: string, clusterRole: string, who: string): KubeObject =>
    rbacBinding(name, labels, { kind: "ClusterRole", name: clusterRole }, group(who));
  return [
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: CLUSTER_INFO.name, namespace: CLUSTER_INFO.namespace, labels },
      data: { [CLUSTER_INFO.kubeconfigKey]: clusterInfoKubeconfig(server, caPem) },
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "rootless-k8s:bootstrap-signer-clusterinfo", namespace: CLUSTER_INFO.namespace, labels },
      rules: [{ apiGroups: [""], resources: ["configmaps"], resourceNames: [CLUSTER_INFO.name], verbs: ["get"] }],
    },
    rbacBinding(
      "rootless-k8s:bootstrap-signer-clusterinfo",
      labels,
      { kind: "Role", name: "rootless-k8s:bootstrap-signer-clusterinfo" },
      { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "system:anonymous" },
      CLUSTER_INFO.namespace,
    ),
    // A token's holder may create a CSR, and the controller-manager's csrapproving approves a
    // kubelet client certificate it asks for; a node may renew its own.
    bindGroup("rootless-k8s:kubelet-bootstrap", "system:node-bootstrapper", NODE_TOKEN_GROUP),
    bindGroup(
      "rootless-k8s:node-autoapprove-bootstrap",
      "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
      NODE_TOKEN_GROUP,
    ),
    bindGroup(
      "rootless-k8s:node-autoapprove-certificate-rotation",
      "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
      "system:nodes",
    ),
    // The joiner's preflight asks whether its node name is taken (kubeadm's kubeadm:get-nodes).
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "rootless-k8s:get-nodes", labels },
      rules: [{ apiGroups: [""], resources: ["nodes"], verbs: ["get"] }],
    },
    bindGroup("rootless-k8s:get-nodes", "rootless-k8s:get-nodes", NODE_TOKEN_GROUP),
    // The cluster's networks, DNS and version, which a joiner's plan takes (and a worker's upgrade checks).
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: CLUSTER_PARAMETERS.name, namespace: CLUSTER_PARAMETERS.namespace, labels },
      data: { [CLUSTER_PARAMETERS.key]: `${JSON.stringify(clusterParameters(plan), null, 2)}\n` },
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "rootless-k8s:cluster-parameters", namespace: CLUSTER_PARAMETERS.namespace, labels },
      rules: [{ apiGroups: [""], resources: ["configmaps"], resourceNames: [CLUSTER_PARAMETERS.name], verbs: ["get"] }],
    },
    {
      ...rbacBinding(
        "rootless-k8s:cluster-parameters",
        labels,
        { kind: "Role", name: "rootless-k8s:cluster-parameters" },
        group(NODE_TOKEN_GROUP),
        CLUSTER_PARAMETERS.namespace,
      ),
      subjects: [group(NODE_TOKEN_GROUP), group("system:nodes")],
    },
    // A worker's kube-proxy runs with its kubelet's certificate (system:node:NAME): kube-proxy's role for nodes.
    bindGroup("rootless-k8s:node-proxier", "system:node-proxier", "system:nodes"),
    // Uninstalling a worker deletes its Node: nodes may delete Nodes; the API server's NodeRestriction
    // admission keeps each to its own ("node X is not allowed to modify node Y", tested end to end).
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: NODE_SELF_DELETE, labels },
      rules: [{ apiGroups: [""], resources: ["nodes"], verbs: ["delete"] }],
    },
    bindGroup(NODE_SELF_DELETE, NODE_SELF_DELETE, "system:nodes"),
  ];
}

/** A bootstrap token's Secret: authentication and signing, our group, expiring `ttlSeconds` after `now`. */
export function tokenSecret(token: BootstrapToken, opts: { now: Date; ttlSeconds: number; description: string }): KubeObject {
  const expiration = new Date(opts.now.getTime() + opts.ttlSeconds * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `${TOKEN_SECRET_PREFIX}${token.id}`, namespace: "kube-system", labels },
    type: TOKEN_SECRET_TYPE,
    stringData: {
      "token-id": token.id,
      "token-secret": token.secret,
      expiration,
      description: opts.description,
      "usage-bootstrap-authentication": "true",
      "usage-bootstrap-signing": "true",
      "auth-extra-groups": NODE_TOKEN_GROUP,
    },
  };
}

/** The environment variable a join reads the token from: never on the command line, where `ps` shows it to every user. */
export const TOKEN_ENV = "ROOTLESS_K8S_TOKEN";

/** The line the other host runs to join: the token in the environment, the server and the CA pin as arguments. */
export function joinLine(server: string, token: BootstrapToken, caHash: string): string {
  return `${TOKEN_ENV}=${token.id}.${token.secret} rootless-k8s join ${server} --ca-hash ${caHash}`;
}

/** The line the other host runs (its preflight): the token in the environment, the server and the CA pin as arguments. */
export function joinCheckLine(server: string, token: BootstrapToken, caHash: string): string {
  return `${TOKEN_ENV}=${token.id}.${token.secret} rootless-k8s doctor --join ${server} --ca-hash ${caHash}`;
}
