// The add-ons' Kubernetes objects, from the plan: pure data that cli/apply sends to the API server
// with server-side apply, and that renderNode also writes as YAML for the user to read
// (config/addons/<addon>.yaml). Modelled on kubeadm's CoreDNS add-on
// (cmd/kubeadm/app/phases/addons/dns), with the node's own choices: one replica, the service
// address of the plan, and a toleration for rootless-k8s's own taints.
import YAML from "yaml";
import { type KubeObject, type RbacSubject, rbacBinding } from "./kube-objects";
import type { Plan } from "../plan/plan";
import { portsObjects } from "./ports";
import { networkPolicyObjects } from "./network-policy";
import { APPROVER_USER, approverRbacObjects } from "./approver-rbac";

export type { KubeObject } from "./kube-objects";

export interface Addon {
  /** "dns" */
  id: string;
  /** Off (--no-dns): its objects are deleted, if an earlier install applied them. */
  enabled: boolean;
  /** Its objects, in the order they are applied (RBAC and config before the workload). */
  objects: KubeObject[];
  /** The Deployment whose availability says the add-on is ready; null when it has none (its readiness is a unit's). */
  ready: { namespace: string; deployment: string } | null;
}

/** Every object carries this label: `kubectl get all -l rootless-k8s.io/addon` lists them. */
export const ADDON_LABEL = "rootless-k8s.io/addon";

export const COREDNS = { namespace: "kube-system", deployment: "coredns", service: "kube-dns", configMap: "coredns" } as const;

export function corefile(domain: string): string {
  return [
    ".:53 {",
    "    errors",
    "    health {",
    "       lameduck 5s",
    "    }",
    "    ready",
    `    kubernetes ${domain} in-addr.arpa ip6.arpa {`,
    "       pods insecure",
    "       fallthrough in-addr.arpa ip6.arpa",
    "       ttl 30",
    "    }",
    "    prometheus :9153",
    // The pod's resolv.conf (dnsPolicy Default) is the node namespace's: the network driver's DNS
    // address, which forwards to whatever the host's resolv.conf names at the time of the query.
    "    forward . /etc/resolv.conf {",
    "       max_concurrent 1000",
    "    }",
    "    cache 30 {",
    `       disable success ${domain}`,
    `       disable denial ${domain}`,
    "    }",
    "    loop",
    "    reload",
    "    loadbalance",
    "}",
    "",
  ].join("\n");
}

function dnsObjects(plan: Plan): KubeObject[] {
  const dns = plan.addons!.dns;
  const labels = { [ADDON_LABEL]: "dns" };
  const app = { "k8s-app": "kube-dns" };
  const ns = COREDNS.namespace;
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "coredns", namespace: ns, labels } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "system:coredns", labels },
      rules: [
        { apiGroups: [""], resources: ["endpoints", "services", "pods", "namespaces"], verbs: ["list", "watch"] },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
      ],
    },
    rbacBinding(
      "system:coredns",
      labels,
      { kind: "ClusterRole", name: "system:coredns" },
      { kind: "ServiceAccount", name: "coredns", namespace: ns },
    ),
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: COREDNS.configMap, namespace: ns, labels },
      data: { Corefile: corefile(dns.domain) },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: COREDNS.deployment, namespace: ns, labels: { ...labels, ...app } },
      spec: {
        replicas: 1,
        strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
        selector: { matchLabels: app },
        template: {
          metadata: { labels: { ...labels, ...app } },
          spec: {
            priorityClassName: "system-cluster-critical",
            serviceAccountName: "coredns",
            // Runs whatever taint rootless-k8s put on its node (mode none's resource-isolation).
            tolerations: [{ key: "CriticalAddonsOnly", operator: "Exists" }, ...ownTolerations(plan)],
            nodeSelector: { "kubernetes.io/os": "linux" },
            containers: [
              {
                name: "coredns",
                image: dns.image.ref,
                imagePullPolicy: "IfNotPresent",
                resources: { limits: { memory: "170Mi" }, requests: { cpu: "100m", memory: "70Mi" } },
                args: ["-conf", "/etc/coredns/Corefile"],
                volumeMounts: [{ name: "config-volume", mountPath: "/etc/coredns", readOnly: true }],
                ports: [
                  { containerPort: 53, name: "dns", protocol: "UDP" },
                  { containerPort: 53, name: "dns-tcp", protocol: "TCP" },
                  { containerPort: 9153, name: "metrics", protocol: "TCP" },
                  { containerPort: 8080, name: "liveness-probe", protocol: "TCP" },
                  { containerPort: 8181, name: "readiness-probe", protocol: "TCP" },
                ],
                livenessProbe: {
                  httpGet: { path: "/health", port: "liveness-probe", scheme: "HTTP" },
                  initialDelaySeconds: 60,
                  timeoutSeconds: 5,
                  successThreshold: 1,
                  failureThreshold: 5,
                },
                readinessProbe: { httpGet: { path: "/ready", port: "readiness-probe", scheme: "HTTP" } },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] },
                  readOnlyRootFilesystem: true,
                },
              },
            ],
            dnsPolicy: "Default",
            volumes: [{ name: "config-volume", configMap: { name: COREDNS.configMap, items: [{ key: "Corefile", path: "Corefile" }] } }],
          },
        },
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: COREDNS.service,
        namespace: ns,
        labels: { ...labels, ...app, "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS" },
        annotations: { "prometheus.io/port": "9153", "prometheus.io/scrape": "true" },
      },
      spec: {
        clusterIP: dns.serviceIP,
        selector: app,
        ports: [
          { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
          { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
          { name: "metrics", port: 9153, protocol: "TCP", targetPort: 9153 },
        ],
      },
    },
  ];
}

export const LOCAL_PATH = {
  namespace: "local-path-storage",
  deployment: "local-path-provisioner",
  configMap: "local-path-config",
} as const;
const LOCAL_PATH_SA = "local-path-provisioner-service-account";
const LOCAL_PATH_PROVISIONER = "rancher.io/local-path";

/** The provisioner's config.json: every node's volumes below the plan's storage folder. */
export function localPathConfig(path: string): string {
  return `${JSON.stringify({ nodePathMap: [{ node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [path] }] }, null, 2)}\n`;
}

/** Tolerations for rootless-k8s's own taints (mode none's resource-isolation), for add-on pods. */
function ownTolerations(plan: Plan) {
  return plan.node.taints.map((t) => ({ key: t.key, operator: "Exists", effect: t.effect }));
}

function storageObjects(plan: Plan): KubeObject[] {
  const st = plan.addons!.storage!;
  const labels = { [ADDON_LABEL]: "storage" };
  const app = { app: "local-path-provisioner" };
  const ns = LOCAL_PATH.namespace;
  const sa: RbacSubject = { kind: "ServiceAccount", name: LOCAL_PATH_SA, namespace: ns };
  // The helper pod makes and removes each volume's folder through a hostPath of its parent (the
  // provisioner adds the volumes, the command and the node); root in the node's user namespace
  // is the user on the host, so the folders are the user's.
  const helperPod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "helper-pod", labels },
    spec: {
      priorityClassName: "system-node-critical",
      tolerations: [{ key: "node.kubernetes.io/disk-pressure", operator: "Exists", effect: "NoSchedule" }, ...ownTolerations(plan)],
      containers: [{ name: "helper-pod", image: st.helperImage.ref, imagePullPolicy: "IfNotPresent" }],
    },
  };
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: ns, labels } },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: LOCAL_PATH_SA, namespace: ns, labels } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "local-path-provisioner-role", namespace: ns, labels },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", "create", "patch", "update", "delete"] }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "local-path-provisioner-role", labels },
      rules: [
        {
          apiGroups: [""],
          resources: ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"],
          verbs: ["get", "list", "watch"],
        },
        { apiGroups: [""], resources: ["persistentvolumes"], verbs: ["get", "list", "watch", "create", "patch", "update", "delete"] },
        { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
        { apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs: ["get", "list", "watch"] },
      ],
    },
    rbacBinding("local-path-provisioner-bind", labels, { kind: "Role", name: "local-path-provisioner-role" }, sa, ns),
    rbacBinding("local-path-provisioner-bind", labels, { kind: "ClusterRole", name: "local-path-provisioner-role" }, sa),
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: LOCAL_PATH.configMap, namespace: ns, labels },
      data: {
        "config.json": localPathConfig(st.path),
        setup: '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
        teardown: '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
        "helperPod.yaml": YAML.stringify(helperPod, { lineWidth: 0 }),
      },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: LOCAL_PATH.deployment, namespace: ns, labels: { ...labels, ...app } },
      spec: {
        replicas: 1,
        selector: { matchLabels: app },
        template: {
          metadata: { labels: { ...labels, ...app } },
          spec: {
            // As CoreDNS and metrics-server: under pressure the kubelet never evicts a critical pod, so
            // volumes keep being provisioned and removed (k3s's local-storage does the same).
            priorityClassName: "system-cluster-critical",
            serviceAccountName: LOCAL_PATH_SA,
            tolerations: ownTolerations(plan),
            containers: [
              {
                name: "local-path-provisioner",
                image: st.image.ref,
                imagePullPolicy: "IfNotPresent",
                command: ["local-path-provisioner", "start", "--config", "/etc/config/config.json"],
                volumeMounts: [{ name: "config-volume", mountPath: "/etc/config/" }],
                env: [
                  { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
                  { name: "CONFIG_MOUNT_PATH", value: "/etc/config/" },
                ],
              },
            ],
            volumes: [{ name: "config-volume", configMap: { name: LOCAL_PATH.configMap } }],
          },
        },
      },
    },
    {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: st.storageClass, labels, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
      provisioner: LOCAL_PATH_PROVISIONER,
      volumeBindingMode: "WaitForFirstConsumer",
      reclaimPolicy: "Delete",
    },
  ];
}

export const METRICS_SERVER = { namespace: "kube-system", deployment: "metrics-server", apiService: "v1beta1.metrics.k8s.io" } as const;
/** The cluster CA as every pod gets it (the controller-manager's --root-ca-file): the kubelet's serving certificate's issuer. */
const POD_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

/**
 * metrics-server as its release manifest (components.yaml of v0.8.0) deploys it, with the node's
 * choices: the kubelet's serving certificate verified with the cluster CA (it is signed by it, for
 * the node's address) instead of trusted blindly, and the node's own taints tolerated.
 */
function metricsObjects(plan: Plan): KubeObject[] {
  const m = plan.addons!.metrics!;
  const labels = { [ADDON_LABEL]: "metrics" };
  const app = { "k8s-app": "metrics-server" };
  const ns = METRICS_SERVER.namespace;
  const sa: RbacSubject = { kind: "ServiceAccount", name: "metrics-server", namespace: ns };
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "metrics-server", namespace: ns, labels: { ...labels, ...app } } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: {
        name: "system:aggregated-metrics-reader",
        labels: {
          ...labels,
          ...app,
          "rbac.authorization.k8s.io/aggregate-to-admin": "true",
          "rbac.authorization.k8s.io/aggregate-to-edit": "true",
          "rbac.authorization.k8s.io/aggregate-to-view": "true",
        },
      },
      rules: [{ apiGroups: ["metrics.k8s.io"], resources: ["pods", "nodes"], verbs: ["get", "list", "watch"] }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "system:metrics-server", labels: { ...labels, ...app } },
      rules: [
        { apiGroups: [""], resources: ["nodes/metrics"], verbs: ["get"] },
        { apiGroups: [""], resources: ["pods", "nodes"], verbs: ["get", "list", "watch"] },
      ],
    },
    rbacBinding(
      "metrics-server-auth-reader",
      { ...labels, ...app },
      { kind: "Role", name: "extension-apiserver-authentication-reader" },
      sa,
      ns,
    ),
    rbacBinding("metrics-server:system:auth-delegator", { ...labels, ...app }, { kind: "ClusterRole", name: "system:auth-delegator" }, sa),
    rbacBinding("system:metrics-server", { ...labels, ...app }, { kind: "ClusterRole", name: "system:metrics-server" }, sa),
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "metrics-server", namespace: ns, labels: { ...labels, ...app } },
      spec: { selector: app, ports: [{ name: "https", port: 443, protocol: "TCP", targetPort: "https" }] },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: METRICS_SERVER.deployment, namespace: ns, labels: { ...labels, ...app } },
      spec: {
        replicas: 1,
        selector: { matchLabels: app },
        strategy: { rollingUpdate: { maxUnavailable: 0 } },
        template: {
          metadata: { labels: { ...labels, ...app } },
          spec: {
            priorityClassName: "system-cluster-critical",
            serviceAccountName: "metrics-server",
            tolerations: [{ key: "CriticalAddonsOnly", operator: "Exists" }, ...ownTolerations(plan)],
            nodeSelector: { "kubernetes.io/os": "linux" },
            containers: [
              {
                name: "metrics-server",
                image: m.image.ref,
                imagePullPolicy: "IfNotPresent",
                args: [
                  "--cert-dir=/tmp",
                  "--secure-port=10250",
                  "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
                  "--kubelet-use-node-status-port",
                  `--kubelet-certificate-authority=${POD_CA}`,
                  "--metric-resolution=15s",
                ],
                ports: [{ containerPort: 10250, name: "https", protocol: "TCP" }],
                // /livez fails while no kubelet answers a scrape (metric-collection-timely): on a
                // one-node cluster that is every restart of the node's kubelet (an upgrade, a changed
                // plan). Upstream's 3 × 10 s killed it twice in one upgrade on the emulated VM; two
                // minutes let it ride out the restart it cannot help.
                livenessProbe: { httpGet: { path: "/livez", port: "https", scheme: "HTTPS" }, periodSeconds: 10, failureThreshold: 12 },
                readinessProbe: {
                  httpGet: { path: "/readyz", port: "https", scheme: "HTTPS" },
                  initialDelaySeconds: 20,
                  periodSeconds: 10,
                  failureThreshold: 3,
                },
                resources: { requests: { cpu: "100m", memory: "200Mi" } },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  capabilities: { drop: ["ALL"] },
                  readOnlyRootFilesystem: true,
                  runAsNonRoot: true,
                  runAsUser: 1000,
                  seccompProfile: { type: "RuntimeDefault" },
                },
                volumeMounts: [{ name: "tmp-dir", mountPath: "/tmp" }],
              },
            ],
            volumes: [{ name: "tmp-dir", emptyDir: {} }],
          },
        },
      },
    },
    {
      apiVersion: "apiregistration.k8s.io/v1",
      kind: "APIService",
      metadata: { name: METRICS_SERVER.apiService, labels: { ...labels, ...app } },
      spec: {
        group: "metrics.k8s.io",
        version: "v1beta1",
        groupPriorityMinimum: 100,
        versionPriority: 100,
        // metrics-server serves with the certificate it makes itself in /tmp (upstream's choice, as
        // kubeadm's, kind's and k3s's manifests): the API server cannot verify it.
        insecureSkipTLSVerify: true,
        service: { name: "metrics-server", namespace: ns },
      },
    },
  ];
}

/** Every add-on of the plan, on or off, with its objects (none for a plan older than add-ons). */
export function addons(plan: Plan): Addon[] {
  if (!plan.addons) return [];
  const list: Addon[] = [{ id: "dns", enabled: plan.addons.dns.enabled, objects: dnsObjects(plan), ready: COREDNS }];
  if (plan.addons.storage)
    list.push({ id: "storage", enabled: plan.addons.storage.enabled, objects: storageObjects(plan), ready: LOCAL_PATH });
  if (plan.addons.metrics)
    list.push({ id: "metrics", enabled: plan.addons.metrics.enabled, objects: metricsObjects(plan), ready: METRICS_SERVER });
  // The port publisher's RBAC: on and off with plan.publish (no flag of its own; its process is the ports unit).
  if (plan.publish)
    list.push({ id: "ports", enabled: plan.publish.enabled, objects: portsObjects({ [ADDON_LABEL]: "ports" }), ready: null });
  // The NetworkPolicy enforcer's RBAC, for every node's (the group system:nodes): kept while the
  // plan knows of enforcement, so a worker enforces even where this node was installed without.
  if (plan.networkPolicy)
    list.push({ id: "network-policy", enabled: true, objects: networkPolicyObjects({ [ADDON_LABEL]: "network-policy" }), ready: null });
  // The CSR approver's RBAC: on with its unit (a server's; absent from plans older than the approver).
  if (plan.units.csrApprover !== undefined)
    list.push({
      id: "csr-approver",
      enabled: Boolean(plan.units.csrApprover),
      objects: approverRbacObjects(APPROVER_USER, { [ADDON_LABEL]: "csr-approver" }),
      ready: null,
    });
  return list;
}

/** One add-on as a YAML stream, for config/addons/<id>.yaml. */
export function addonYaml(addon: Addon): string {
  return `# Applied by rootless-k8s with server-side apply (field manager rootless-k8s); rewritten on every install.\n${addon.objects
    .map((o) => YAML.stringify(o, { lineWidth: 0 }))
    .join("---\n")}`;
}
