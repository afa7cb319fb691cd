// The add-ons' REST paths and the retry rule for a busy API server (the real applies run in the e2e).
import { describe, expect, it } from "vitest";
import { objectPath, patiently } from "../../../cli/apply/addons";
import { InterruptedError } from "../../../cli/errors";
import { buildPlan } from "../../../cli/plan";
import { addons } from "../../../cli/render/addons";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

describe("objectPath", () => {
  it("core, grouped, namespaced and cluster-scoped objects of every add-on", () => {
    const plan = buildPlan(baseFacts(), {}, upstreamVersions());
    const paths = addons(plan).flatMap((a) => a.objects.map(objectPath));
    expect(paths).toContain("/api/v1/namespaces/kube-system/services/kube-dns");
    expect(paths).toContain("/apis/apps/v1/namespaces/kube-system/deployments/coredns");
    expect(paths).toContain("/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Acoredns");
    expect(paths).toContain("/api/v1/namespaces/local-path-storage");
    expect(paths).toContain("/apis/storage.k8s.io/v1/storageclasses/local-path");
    expect(paths).toContain("/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io");
  });
});

describe("patiently", () => {
  it("tries again on no answer, 429 and 5xx, and returns the first other answer", async () => {
    const answers = [
      new Error("no answer within 30000 ms"),
      { status: 503, body: "" },
      { status: 429, body: "" },
      { status: 201, body: "{}" },
    ];
    let calls = 0;
    const r = await patiently(
      async () => {
        const a = answers[calls++]!;
        if (a instanceof Error) throw a;
        return a;
      },
      { budgetMs: 5000, pauseMs: 1 },
    );
    expect(r.status).toBe(201);
    expect(calls).toBe(4);
  });

  it("a 4xx other than 429 is an answer, not retried; the budget ends the tries with the last failure", async () => {
    let calls = 0;
    const refused = async () => {
      calls++;
      return { status: 422, body: "" };
    };
    expect((await patiently(refused, { budgetMs: 5000, pauseMs: 1 })).status).toBe(422);
    expect(calls).toBe(1);
    await expect(patiently(async () => Promise.reject(new Error("ECONNREFUSED")), { budgetMs: 30, pauseMs: 10 })).rejects.toThrow(
      "ECONNREFUSED",
    );
  });

  it("Ctrl-C ends the wait between tries with InterruptedError (exit 130), not after the budget", async () => {
    const ac = new AbortController();
    let calls = 0;
    const busy = async () => {
      calls++;
      return { status: 503, body: "" };
    };
    // The first answer is busy, so it waits a minute before trying again; Ctrl-C comes meanwhile.
    setTimeout(() => ac.abort(), 20);
    const err = await patiently(busy, { budgetMs: 600_000, pauseMs: 60_000, signal: ac.signal }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InterruptedError);
    expect((err as InterruptedError).exitCode).toBe(130);
    expect(calls).toBe(1);
  });
});
