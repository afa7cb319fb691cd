// What a control plane serves to the hosts that join it (cli/render/join.ts), from a real plan:
// every object valid by the API server's own naming rules, labelled as ours; the cluster parameters
// a joiner reads back; the policy that keeps a node to deleting its own Node.
import { describe, expect, it } from "vitest";
import { parseClusterParameters } from "../../../cli/host/parse/cluster-parameters";
import { buildPlan } from "../../../cli/plan/index";
import { JOIN_LABEL, NODE_SELF_DELETE, clusterParameters, joinLine, joinObjects } from "../../../cli/render/join";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

const plan = buildPlan(baseFacts(), {}, upstreamVersions());
const objects = joinObjects(plan, "https://192.168.1.20:6443", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const byKind = (kind: string) => objects.filter((o) => o.kind === kind);

describe("joinObjects", () => {
  it("are all labelled as the join's, and named as the API server requires (RBAC names may hold colons, nothing else may)", () => {
    for (const o of objects) {
      expect((o.metadata.labels as Record<string, string> | undefined)?.[JOIN_LABEL], `${o.kind} ${o.metadata.name}`).toBe("true");
      if (!o.kind.startsWith("Cluster") && !o.kind.startsWith("Role")) expect(o.metadata.name, o.kind).toMatch(DNS_SUBDOMAIN);
    }
  });

  it("publish the cluster parameters, which a joiner reads back as they are", () => {
    const cm = byKind("ConfigMap").find((o) => o.metadata.name === "rootless-k8s-cluster")!;
    const text = (cm as unknown as { data: Record<string, string> }).data["cluster.json"]!;
    expect(parseClusterParameters(text)).toEqual(clusterParameters(plan));
    expect(clusterParameters(plan)).toMatchObject({
      pods: plan.cidrs.pods,
      services: plan.cidrs.services,
      dns: { serviceIP: plan.addons!.dns.serviceIP },
    });
  });

  it("let nodes delete Nodes (NodeRestriction keeps each to its own: tested end to end)", () => {
    const b = byKind("ClusterRoleBinding").find((o) => o.metadata.name === NODE_SELF_DELETE) as unknown as {
      roleRef: { name: string };
      subjects: { name: string }[];
    };
    expect(b.roleRef.name).toBe(NODE_SELF_DELETE);
    expect(b.subjects.map((x) => x.name)).toEqual(["system:nodes"]);
    const role = byKind("ClusterRole").find((o) => o.metadata.name === NODE_SELF_DELETE) as unknown as { rules: unknown[] };
    expect(role.rules).toEqual([{ apiGroups: [""], resources: ["nodes"], verbs: ["delete"] }]);
  });

  it("give nodes kube-proxy's role (a worker's kube-proxy runs with its kubelet's certificate)", () => {
    const b = byKind("ClusterRoleBinding").find((o) => o.metadata.name === "rootless-k8s:node-proxier") as unknown as {
      roleRef: { name: string };
      subjects: { kind: string; name: string }[];
    };
    expect(b.roleRef.name).toBe("system:node-proxier");
    expect(b.subjects).toEqual([{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "system:nodes" }]);
  });
});

describe("joinLine", () => {
  it("puts the token in the environment, never in the arguments", () => {
    expect(joinLine("https://192.0.2.2:6443", { id: "abcdef", secret: "0123456789abcdef" }, `sha256:${"c".repeat(64)}`)).toBe(
      `ROOTLESS_K8S_TOKEN=abcdef.0123456789abcdef rootless-k8s join https://192.0.2.2:6443 --ca-hash sha256:${"c".repeat(64)}`,
    );
  });
});
