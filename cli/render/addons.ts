// The add-ons' Kubernetes objects, from the plan: pure data that cli/apply sends to the API server
// with server-side apply, and that renderNode also writes as YAML for the user to read
// (config/addons/<addon>.yaml). Modelled on kubeadm's CoreDNS add-on
// (cmd/kubeadm/app/phases/addons/dns), with the node's own choices: one replica, the service
// address of the plan, and a toleration for rootless-k8s's own taints.
import YAML from "yaml";
import type { Plan } from "../plan/plan";

export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string } & Record<string, unknown>;
} & Record<string, unknown>;

export interface Addon {
  /** "dns" */
  id: string;
  /** Off (--no-dns): its objects are deleted, if an earlier install applied them. */
  enabled: boolean;
  /** Its objects, in the order they are applied (RBAC and config before the workload). */
  objects: KubeObject[];
  /** The Deployment whose availability says the add-on is ready. */
  ready: { namespace: string; deployment: string };
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
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "system:coredns", labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:coredns" },
      subjects: [{ kind: "ServiceAccount", name: "coredns", namespace: ns }],
    },
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
            tolerations: [
              { key: "CriticalAddonsOnly", operator: "Exists" },
              ...plan.node.taints.map((t) => ({ key: t.key, operator: "Exists", effect: t.effect })),
            ],
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

/** Every add-on of the plan, on or off, with its objects (none for a plan older than add-ons). */
export function addons(plan: Plan): Addon[] {
  if (!plan.addons) return [];
  return [{ id: "dns", enabled: plan.addons.dns.enabled, objects: dnsObjects(plan), ready: COREDNS }];
}

/** One add-on as a YAML stream, for config/addons/<id>.yaml. */
export function addonYaml(addon: Addon): string {
  return `# Applied by rootless-k8s with server-side apply (field manager rootless-k8s); rewritten on every install.\n${addon.objects
    .map((o) => YAML.stringify(o, { lineWidth: 0 }))
    .join("---\n")}`;
}
