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
