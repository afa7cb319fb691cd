// The RBAC of the kubelet serving-certificate approver (cli/agents/csr-approver.ts), pure data: a
// ClusterRole with what it uses and no more (read and watch CertificateSigningRequests, update their
// approval, approve for the signer kubernetes.io/kubelet-serving only, read Nodes), bound to the
// user of its client certificate. Without the `approve` verb on that signer the API server refuses
// the approval (Forbidden) even with the update on certificatesigningrequests/approval.
import { KUBELET_SERVING_SIGNER } from "../plan/csr-approval";
import { type KubeObject, rbacBinding } from "./kube-objects";

/** A client certificate's CN for the approver, when it gets one of its own (no `system:` prefix, no system:masters). */
export const APPROVER_USER = "rootless-k8s-csr-approver";
export const APPROVER_ROLE = "rootless-k8s:kubelet-serving-approver";

export const APPROVER_RULES = [
  { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: ["get", "list", "watch"] },
  // PUT .../certificatesigningrequests/NAME/approval, as `kubectl certificate approve` does.
  { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests/approval"], verbs: ["update"] },
  { apiGroups: ["certificates.k8s.io"], resources: ["signers"], resourceNames: [KUBELET_SERVING_SIGNER], verbs: ["approve"] },
  // The Node a request names: its addresses are what the request's names are checked against.
  { apiGroups: [""], resources: ["nodes"], verbs: ["get"] },
] as const;

/** The ClusterRole and its ClusterRoleBinding to `user` (default: the approver's own certificate's user). */
export function approverRbacObjects(user: string = APPROVER_USER, labels: Record<string, string> = {}): KubeObject[] {
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: APPROVER_ROLE, labels },
      rules: APPROVER_RULES.map((r) => structuredClone(r)),
    },
    rbacBinding(
      APPROVER_ROLE,
      labels,
      { kind: "ClusterRole", name: APPROVER_ROLE },
      { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user },
    ),
  ];
}
