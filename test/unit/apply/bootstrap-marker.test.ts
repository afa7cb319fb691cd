// The bootstrap marker (cli/apply/bootstrap-marker.ts) on real files: a node that never passed the
// whole /readyz waits for it and records the version once Ready; at that version the next start
// waits without the polled hooks and leaves the marker alone; a new version waits for the whole
// /readyz again; a worker (no API server, no etcd of its own) neither reads nor writes one.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { bootstrapReadiness } from "../../../cli/apply/bootstrap-marker";
import { buildPlan } from "../../../cli/plan/index";
import type { Plan } from "../../../cli/plan/plan";
import { layout } from "../../../cli/render/layout";
import { tempDir } from "../../helpers/temp";
import { baseFacts, joinedWorker, upstreamVersions } from "../plan/facts-builder";

const FAST = "/readyz?exclude=poststarthook/rbac/bootstrap-roles&exclude=poststarthook/scheduling/bootstrap-system-priority-classes";

/** A plan whose etcd has data (its member folder), as after the node's first start. */
function planIn(name: string): Plan {
  const plan = buildPlan(baseFacts(), { nodeName: "n1", prefix: path.join(tempDir(`rk8s-boot-${name}-`), "prefix") }, upstreamVersions());
  mkdirSync(member(plan), { recursive: true });
  return plan;
}
const member = (plan: Plan) => path.join(layout(plan).data.etcd, "member");
const line = (plan: Plan, version = plan.versions.components.kubernetes) => `${version} ${statSync(member(plan)).ino} ${member(plan)}\n`;

function withKubernetes(plan: Plan, version: string): Plan {
  return { ...plan, versions: { ...plan.versions, components: { ...plan.versions.components, kubernetes: version } } };
}

describe("bootstrapReadiness", () => {
  it("first start: the whole /readyz, then the version is recorded beside etcd's data", async () => {
    const plan = planIn("first");
    const marker = layout(plan).data.bootstrapMarker;
    const b = await bootstrapReadiness(plan);
    expect(b.readyz).toBe("/readyz");
    await b.record();
    expect(readFileSync(marker, "utf8")).toBe(line(plan));
    expect(path.dirname(marker)).toBe(plan.paths.dataDir);
    expect(statSync(marker).mode & 0o777).toBe(0o644);
  });

  it("a later start at the same version: without the polled hooks, and the marker is not rewritten", async () => {
    const plan = planIn("warm");
    await (await bootstrapReadiness(plan)).record();
    const marker = layout(plan).data.bootstrapMarker;
    const before = statSync(marker).mtimeMs;
    const b = await bootstrapReadiness(plan);
    expect(b.readyz).toBe(FAST);
    await new Promise((r) => setTimeout(r, 20));
    await b.record();
    expect(statSync(marker).mtimeMs).toBe(before);
  });

  it("another version (upgrade, rollback): the whole /readyz again, then that version is recorded", async () => {
    const plan = planIn("upgrade");
    await (await bootstrapReadiness(plan)).record();
    const next = withKubernetes(plan, "9.99.0");
    const b = await bootstrapReadiness(next);
    expect(b.readyz).toBe("/readyz");
    await b.record();
    expect(readFileSync(layout(plan).data.bootstrapMarker, "utf8")).toBe(line(plan, "9.99.0"));
    expect((await bootstrapReadiness(plan)).readyz).toBe("/readyz");
  });

  it("a marker that is not this tool's line (edited, truncated): the whole /readyz", async () => {
    const plan = planIn("edited");
    writeFileSync(layout(plan).data.bootstrapMarker, line(plan).trimEnd());
    expect((await bootstrapReadiness(plan)).readyz).toBe("/readyz");
  });

  it("etcd's data made anew (deleted by hand, restored from a snapshot): the whole /readyz, then the new data is recorded", async () => {
    const plan = planIn("new-etcd");
    await (await bootstrapReadiness(plan)).record();
    const before = line(plan);
    // The old data moves aside while the new member folder is made, so the two never share an inode.
    renameSync(layout(plan).data.etcd, `${layout(plan).data.etcd}.old`);
    mkdirSync(member(plan), { recursive: true });
    rmSync(`${layout(plan).data.etcd}.old`, { recursive: true });
    expect(line(plan)).not.toBe(before);
    const b = await bootstrapReadiness(plan);
    expect(b.readyz).toBe("/readyz");
    await b.record();
    expect(readFileSync(layout(plan).data.bootstrapMarker, "utf8")).toBe(line(plan));
  });

  it("no etcd data yet: nothing is recorded", async () => {
    const plan = planIn("no-etcd");
    rmSync(layout(plan).data.etcd, { recursive: true });
    await (await bootstrapReadiness(plan)).record();
    expect(existsSync(layout(plan).data.bootstrapMarker)).toBe(false);
  });

  it("a worker: no marker is read or written (its API server is another host's)", async () => {
    const base = planIn("worker");
    const plan = joinedWorker(base, "198.51.100.2");
    writeFileSync(layout(base).data.bootstrapMarker, line(base));
    const b = await bootstrapReadiness(plan);
    expect(b.readyz).toBe("/readyz");
    await b.record();
    expect(readFileSync(layout(base).data.bootstrapMarker, "utf8")).toBe(line(base));
  });
});
