// One plan, two ways to run it (issue 38): the services `rootless-k8s up` reads are the systemd
// units' own commands, order, restart and stop settings, rendered from the same data
// (cli/render/services.ts), so neither can drift from the other. And what decides which one runs:
// the user's systemd where a user manager answers, else `up`, or --supervisor.
import { beforeAll, describe, expect, it } from "vitest";
import { buildPlan } from "../../../cli/plan/index";
import { decideSupervisor } from "../../../cli/plan/supervisor";
import { generatePki, renderNode, type RenderedFile } from "../../../cli/render/index";
import type { NodeService, NodeTarget } from "../../../cli/render/services";
import { commandLine } from "../../../cli/render/systemd";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

const versions = upstreamVersions();
const facts = baseFacts();
const noManager = { ...facts, systemd: { ...facts.systemd, userManager: false, pid1: false } };

describe("what runs the node", () => {
  it("the user's systemd where its manager answers; up where none does; --supervisor decides over both", () => {
    expect(decideSupervisor(facts, {}).kind).toBe("systemd");
    expect(decideSupervisor(noManager, {}).kind).toBe("up");
    expect(decideSupervisor(noManager, {}).reasons[0]).toMatch(/^PID 1 is not systemd: the node runs under `rootless-k8s up`/);
    expect(decideSupervisor(facts, { supervisor: "up" }).kind).toBe("up");
    expect(decideSupervisor(noManager, { supervisor: "systemd" }).kind).toBe("systemd");
  });
  it("under up: logs to files, mode none, the services' files in the config folder", () => {
    const plan = buildPlan(facts, { supervisor: "up" }, versions);
    expect(plan.logging.to).toBe("file");
    expect(plan.mode.name).toBe("none");
    expect(plan.paths.unitDir).toBe(`${plan.paths.configDir}/services`);
  });
  it("without XDG_RUNTIME_DIR nor /run/user/UID, up keeps the sockets in /tmp/rootless-k8s-UID/rootless-k8s", () => {
    const rt = { ...facts.user.runtimeDir, fromEnv: false, exists: false, ownedByUser: false };
    const plan = buildPlan({ ...noManager, user: { ...facts.user, runtimeDir: rt } }, {}, versions);
    expect(plan.paths.runtimeDir).toBe(`/tmp/rootless-k8s-${facts.user.uid}/rootless-k8s`);
  });
});

describe("the services under up are the units' own", () => {
  const sd = buildPlan(facts, { supervisor: "systemd", mode: "none" }, versions);
  const up = buildPlan(facts, { supervisor: "up" }, versions);
  let sdFiles: RenderedFile[] = [];
  let upFiles: RenderedFile[] = [];
  beforeAll(async () => {
    const pki = await generatePki(up);
    sdFiles = renderNode({ ...sd, logging: up.logging, units: up.units }, pki);
    upFiles = renderNode(up, pki);
  });
  const unitText = (name: string) => String(sdFiles.find((f) => f.kind === "unit" && f.unit === name)!.content);
  const spec = <T>(name: string) => JSON.parse(String(upFiles.find((f) => f.kind === "unit" && f.unit === name)!.content)) as T;

  it("are JSON files named after the units, and no unit file is written", () => {
    const units = upFiles.filter((f) => f.kind === "unit");
    expect(units.every((f) => f.path.startsWith(`${up.paths.configDir}/services/`) && f.path.endsWith(".json"))).toBe(true);
    expect(units.map((f) => f.unit)).toEqual(sdFiles.filter((f) => f.kind === "unit" && !f.unit!.includes("logrotate")).map((f) => f.unit));
  });

  it("have each unit's ExecStartPre, ExecStart and ExecStartPost, restart and stop settings", () => {
    const target = spec<NodeTarget>(up.units.target);
    expect(target.members[0]).toBe(up.units.owner);
    expect(target.timers.map((t) => [t.name, t.everySec])).toEqual([["rootless-k8s-logrotate.timer", 300]]);
    for (const name of target.members) {
      const s = spec<NodeService>(name);
      const text = unitText(name);
      // The paths differ only where the plans do (the units folder); the commands are the same.
      expect(text).toContain(`ExecStart=${commandLine(s.exec)}\n`);
      for (const pre of s.pre) expect(text).toContain(`ExecStartPre=${commandLine(pre)}\n`);
      for (const post of s.post) expect(text.replace(/systemctl --user is-active/g, "")).toContain(`ExecStartPost=${commandLine(post)}\n`);
      expect(text).toContain(`RestartSec=${s.restartSec}\n`);
      expect(text).toContain(`TimeoutStopSec=${s.stopTimeoutSec}\n`);
      expect(text).toContain(`StartLimitBurst=${s.startLimit.burst}\n`);
      expect(text).toContain(`StandardOutput=append:${s.log}\n`);
      for (const a of s.after) expect(text).toMatch(new RegExp(`^After=.*${a.replace(/\./g, "\\.")}`, "m"));
    }
  });

  it("the owner is ready when the runtime's CRI socket answers, and its network watch knows a stop by the supervisor's marker", () => {
    const owner = spec<NodeService>(up.units.owner);
    expect(owner.ready).toEqual({ socket: up.runtime.criSocket });
    expect(owner.killMode).toBe("mixed");
    expect(owner.stopMarker).toBe(`${up.paths.runtimeDir}/owner-stopping`);
    const netwatch = String(upFiles.find((f) => f.path.endsWith("rootless-k8s-netwatch"))?.content ?? "");
    if (netwatch) {
      expect(netwatch).toContain(`[ ! -e ${up.paths.runtimeDir}/owner-stopping ]`);
      expect(netwatch).not.toContain("systemctl --user is-active");
    }
  });
});
