// The API server's structured authentication configuration (issue 34): anonymous requests are
// allowed only on the health endpoints and on kube-public/cluster-info, which a joining host reads
// before it has any credential (the CA and the server, signed with the token: nothing secret).
// Upstream's default lets anonymous requests through to whatever RBAC gives system:unauthenticated
// (/version among them); with conditions, any other path answers 401 before RBAC is asked.
import YAML from "yaml";
import { CLUSTER_INFO } from "../host/parse/bootstrap-token";
import type { Plan } from "../plan/plan";
import { ANONYMOUS_CONDITIONS_SINCE, atLeast } from "../plan/rules";

export const ANONYMOUS_PATHS = [
  "/livez",
  "/readyz",
  "/healthz",
  `/api/v1/namespaces/${CLUSTER_INFO.namespace}/configmaps/${CLUSTER_INFO.name}`,
] as const;

/** Whether this plan's API server gets the file (a server on Kubernetes >= 1.34). */
export function hasAuthenticationConfig(plan: Plan): boolean {
  return plan.role !== "worker" && atLeast(plan.versions.components.kubernetes ?? "0", ANONYMOUS_CONDITIONS_SINCE);
}

export function authenticationConfiguration(): Record<string, unknown> {
  return {
    apiVersion: "apiserver.config.k8s.io/v1",
    kind: "AuthenticationConfiguration",
    anonymous: { enabled: true, conditions: ANONYMOUS_PATHS.map((p) => ({ path: p })) },
  };
}

export function renderAuthenticationConfig(): string {
  return `# Written by rootless-k8s from the node plan; rewritten on every install.\n${YAML.stringify(authenticationConfiguration(), { lineWidth: 0 })}`;
}
