// Kubernetes objects as plain data, for the add-ons (cli/render/addons.ts) and the port publisher's
// RBAC (cli/render/ports.ts): the object shape cli/apply sends with server-side apply, and the one
// RBAC binding shape they all use.

export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string } & Record<string, unknown>;
} & Record<string, unknown>;

/** Who a binding grants its role to: a pod's ServiceAccount, the user of a client certificate, or a group. */
export type RbacSubject =
  | { kind: "ServiceAccount"; name: string; namespace: string }
  | { apiGroup: string; kind: "User" | "Group"; name: string };

/**
 * A binding of `role` to `subject`: a RoleBinding in `namespace` when given (of a Role or a
 * ClusterRole), else a ClusterRoleBinding.
 */
export function rbacBinding(
  name: string,
  labels: Record<string, string>,
  role: { kind: "Role" | "ClusterRole"; name: string },
  subject: RbacSubject,
  namespace?: string,
): KubeObject {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: namespace ? "RoleBinding" : "ClusterRoleBinding",
    metadata: namespace ? { name, namespace, labels } : { name, labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: role.kind, name: role.name },
    subjects: [subject],
  };
}

/** What an Event is about: the object `kubectl describe` shows it under. */
export interface EventSubject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** A core/v1 Warning Event on `subject`, written by `component` on `nodeName`. */
export function warningEvent(
  subject: EventSubject,
  e: { reason: string; message: string; component: string; nodeName: string; now: Date },
): Record<string, unknown> {
  const ns = subject.metadata.namespace ?? "default";
  const time = e.now.toISOString().replace(/\.\d+Z$/, "Z");
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { generateName: `${subject.metadata.name}.`, namespace: ns },
    involvedObject: {
      apiVersion: subject.apiVersion,
      kind: subject.kind,
      namespace: ns,
      name: subject.metadata.name,
      ...(subject.metadata.uid ? { uid: subject.metadata.uid } : {}),
      ...(subject.metadata.resourceVersion ? { resourceVersion: subject.metadata.resourceVersion } : {}),
    },
    reason: e.reason,
    message: e.message,
    type: "Warning",
    source: { component: e.component, host: e.nodeName },
    reportingComponent: e.component,
    reportingInstance: e.nodeName,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}
