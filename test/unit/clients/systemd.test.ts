// Reading `systemctl --user show` output and unit log files (where there is no journal).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lastLogLines, parseUnitState, unitLogFile } from "../../../cli/clients/systemd";
import { isFailing } from "../../../cli/readiness/watch";
import { tempDir } from "../../helpers/temp";

describe("parseUnitState", () => {
  it("reads the properties systemctl show prints", () => {
    const s = parseUnitState(
      "k.service",
      "ActiveState=activating\nSubState=auto-restart\nResult=exit-code\nLoadState=loaded\nMainPID=0\nNRestarts=3\nNeedDaemonReload=no\n",
    );
    expect(s).toEqual({
      unit: "k.service",
      activeState: "activating",
      subState: "auto-restart",
      result: "exit-code",
      loadState: "loaded",
      mainPid: 0,
      nRestarts: 3,
      needDaemonReload: false,
    });
    expect(isFailing(s)).toBe(true);
  });
  it("says unknown for a unit systemd does not answer about, and failing only when it is", () => {
    const s = parseUnitState("x.service", "");
    expect(s.activeState).toBe("unknown");
    expect(isFailing(s)).toBe(false);
    expect(isFailing(parseUnitState("y", "ActiveState=failed\nNRestarts=0"))).toBe(true);
    expect(isFailing(parseUnitState("z", "ActiveState=active\nNRestarts=4"))).toBe(false);
  });
});

describe("lastLogLines", () => {
  it("gives the last lines of a unit's log file, without blank ones", async () => {
    const d = tempDir("rk8s-log-");
    const f = unitLogFile(d, "rootless-k8s-kubelet.service");
    expect(f).toBe(join(d, "rootless-k8s-kubelet.service.log"));
    writeFileSync(f, Array.from({ length: 50 }, (_, i) => `line ${i}`).join("\n") + "\n\n");
    expect(await lastLogLines(f, 3)).toEqual(["line 47", "line 48", "line 49"]);
    expect(await lastLogLines(join(d, "missing.log"), 3)).toBeNull();
  });
});
