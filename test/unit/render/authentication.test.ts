// The API server's anonymous requests (issue 34): allowed only on the health endpoints and on
// cluster-info, through --authentication-config, from Kubernetes 1.34 (where anonymous.conditions
// is GA); a worker runs no API server.
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { buildPlan } from "../../../cli/plan";
import { apiServerArgs } from "../../../cli/render/components";
import { generatePki, renderNode } from "../../../cli/render/index";
import { layout } from "../../../cli/render/layout";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

describe("the API server's authentication configuration", () => {
  it("allows anonymous requests on the health endpoints and cluster-info only", async () => {
    const plan = buildPlan(baseFacts(), {}, upstreamVersions());
    const file = layout(plan).authenticationConfig;
    expect(apiServerArgs(plan)).toContain(`--authentication-config=${file}`);
    expect(apiServerArgs(plan).some((a) => a.startsWith("--anonymous-auth"))).toBe(false); // the two cannot be combined
    const rendered = renderNode(plan, await generatePki(plan)).find((f) => f.path === file)!;
    expect(rendered).toMatchObject({ kind: "config", unit: plan.units.apiServer, mode: 0o644 });
    expect(YAML.parse(String(rendered.content))).toEqual({
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "AuthenticationConfiguration",
      anonymous: {
        enabled: true,
        conditions: [
          { path: "/livez" },
          { path: "/readyz" },
          { path: "/healthz" },
          { path: "/api/v1/namespaces/kube-public/configmaps/cluster-info" },
        ],
      },
    });
  });

  it("leaves Kubernetes before 1.34 as upstream sets it", () => {
    const v = upstreamVersions();
    const old = buildPlan(baseFacts(), {}, { ...v, components: { ...v.components, kubernetes: "1.33.4" } });
    expect(apiServerArgs(old).some((a) => a.startsWith("--authentication-config"))).toBe(false);
  });
});
