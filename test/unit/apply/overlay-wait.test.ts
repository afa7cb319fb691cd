// join's last wait (cli/apply/worker-ready.ts waitForOverlay): the overlay agent's state file, as it
// writes it, read until every other node answered through the overlay; peers that do not answer
// make one error that names them and the UDP port to open (exit 1: the node stays joined).
import { mkdirSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { OverlayStateFile } from "../../../cli/plan/overlay";
import { waitForOverlay } from "../../../cli/apply/worker-ready";
import { UserError } from "../../../cli/errors";
import { buildPlan } from "../../../cli/plan/index";
import { layout } from "../../../cli/render/layout";
import { tempDir } from "../../helpers/temp";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

function planIn(dir: string) {
  const plan = buildPlan(baseFacts(), {}, upstreamVersions());
  return { ...plan, paths: { ...plan.paths, runtimeDir: dir } };
}
const peer = (reachable: boolean) => ({
  node: "cp",
  podCidr: "10.244.0.0/24",
  vtep: "10.244.0.0",
  publicIP: "192.0.2.2",
  reachable,
  error: reachable ? null : "no answer within 3 s",
});
const state = (peers: OverlayStateFile["peers"]): OverlayStateFile => ({
  schemaVersion: 1,
  updated: "2026-12-03T15:00:00Z",
  vtep: "10.244.1.0",
  peers,
  waiting: [],
});

describe("waitForOverlay", () => {
  it("returns the state once every peer answered (the file written meanwhile)", async () => {
    const dir = tempDir("rk8s-overlay-wait-");
    const plan = planIn(dir);
    const file = layout(plan).run.overlayState;
    writeFileSync(file, JSON.stringify(state([peer(false)])));
    setTimeout(() => writeFileSync(file, JSON.stringify(state([peer(true)]))), 1200);
    expect((await waitForOverlay(plan, 10_000)).peers).toEqual([peer(true)]);
  });

  it("a peer that never answers: exit 1, naming it, its host and the UDP port to open both ways", async () => {
    const dir = tempDir("rk8s-overlay-wait-");
    mkdirSync(dir, { recursive: true });
    const plan = planIn(dir);
    writeFileSync(layout(plan).run.overlayState, JSON.stringify(state([peer(false)])));
    const e = (await waitForOverlay(plan, 1500).catch((x: unknown) => x)) as UserError;
    expect(e).toBeInstanceOf(UserError);
    expect(e.exitCode).toBe(1);
    expect(e.message).toMatch(/its pods do not reach the other nodes' pods within 2 s: cp \(host 192\.0\.2\.2\): no answer within 3 s$/);
    expect(e.fix).toMatch(/^open UDP 8472 both ways between this host and 192\.0\.2\.2/);
  });

  it("no state at all: says the overlay unit wrote none", async () => {
    const plan = planIn(tempDir("rk8s-overlay-wait-"));
    const e = (await waitForOverlay(plan, 500).catch((x: unknown) => x)) as UserError;
    expect(e.message).toContain("rootless-k8s-overlay.service wrote no state");
  });
});
