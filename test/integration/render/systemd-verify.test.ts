// Every rendered unit passes `systemd-analyze --user verify`, run as an ordinary user against a
// temporary HOME where every file the units name exists: the plan is made for that HOME from the
// real fixture host, the rendered files are written at their paths, and the binaries are stand-in
// executables in versions/<set>/bin behind the `current` link (and rootless-k8s itself in ~/.local/bin).
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Plan } from "../../../cli/plan/plan";
import { folders, generatePki, renderNode, type Pki } from "../../../cli/render/index";
import { COMBOS, comboFacts, planCombo, relocated, type Combo } from "../../golden/combos";
import { tempDir } from "../../helpers/temp";
import { testUser } from "../../helpers/user";

const hasAnalyze = spawnSync("systemd-analyze", ["--version"]).status === 0;
const work = tempDir("rk8s-verify-");
chmodSync(work, 0o755);
const user = testUser("rk8s-render");

/** Writes the node's files below its (temporary) HOME, plus stand-ins for what the units run. */
function materialize(plan: Plan, pki: Pki): string[] {
  for (const f of folders(plan)) mkdirSync(f.path, { recursive: true, mode: f.mode });
  const files = renderNode(plan, pki);
  for (const f of files) {
    mkdirSync(dirname(f.path), { recursive: true });
    writeFileSync(f.path, f.content, { mode: f.mode });
    chmodSync(f.path, f.mode);
  }
  mkdirSync(plan.paths.versionBinDir, { recursive: true });
  for (const bin of ["rootlesskit", "rootlessctl"]) copyFileSync("/bin/true", join(plan.paths.versionBinDir, bin));
  symlinkSync(plan.versions.id, plan.paths.currentLink);
  // The port publisher and the CSR approver run rootless-k8s itself (~/.local/bin/rootless-k8s in these plans).
  if (plan.publish && (plan.publish.enabled || plan.units.csrApprover)) {
    mkdirSync(dirname(plan.publish.command[0]!), { recursive: true });
    copyFileSync("/bin/true", plan.publish.command[0]!);
  }
  if (plan.runtime.docker) {
    // The user's own rootless Docker unit, as dockerd-rootless-setuptool.sh writes it.
    writeFileSync(
      join(plan.paths.unitDir, "docker.service"),
      "[Unit]\nDescription=Docker (rootless)\n\n[Service]\nType=notify\nExecStart=/bin/true\n",
    );
  }
  return files.filter((f) => f.kind === "unit").map((f) => f.path);
}

/** The plan of `combo` for a HOME `home` (and a runtime dir) below work/<folder>. */
async function planBelow(folder: string, combo: Combo, home = "home") {
  const root = join(work, folder);
  const place = { root, home: join(root, home), runtimeDir: join(root, "run") };
  mkdirSync(place.runtimeDir, { recursive: true, mode: 0o700 });
  return { ...place, result: planCombo(combo, relocated(await comboFacts(combo), place.home, place.runtimeDir)) };
}

function verify(home: string, runtimeDir: string, units: string[]) {
  return user.run("systemd-analyze", ["--user", "verify", ...units], { HOME: home, XDG_RUNTIME_DIR: runtimeDir });
}

describe.skipIf(!hasAnalyze)("systemd-analyze --user verify, as an ordinary user with a temporary HOME", () => {
  let pki: Pki | null = null;
  // A node run by `rootless-k8s up` has no unit files (its services are JSON: test/unit/supervisor).
  for (const combo of COMBOS.filter((c) => c.expect === "plan" && !/-up$/.test(c.name))) {
    it(combo.name, async () => {
      const { root, home, runtimeDir, result } = await planBelow(combo.name, combo);
      expect(result.refusal).toBeNull();
      pki ??= await generatePki(result.plan!);
      const units = materialize(result.plan!, pki);
      user.own(root);
      const r = verify(home, runtimeDir, units);
      expect(r.error).toBeUndefined();
      expect(`${r.stdout}${r.stderr}`).toBe("");
      expect(r.status).toBe(0);
    }, 60_000);
  }

  it("quotes and escapes paths with a space, a % and a $ (a HOME like that still verifies)", async () => {
    const combo = COMBOS.find((c) => c.name === "none-containerd-slirp4netns")!;
    const { root, home, runtimeDir, result } = await planBelow("odd", combo, "my home 100% $x");
    const plan = result.plan!;
    const units = materialize(plan, pki ?? (await generatePki(plan)));
    const kubelet = readFileSync(units.find((u) => u.endsWith(plan.units.kubelet))!, "utf8");
    expect(kubelet).toContain(`ExecStart="${home.replace(/%/g, "%%")}/.local/share/rootless-k8s/libexec/rootless-k8s-enter"`);
    expect(kubelet).toContain(`"--config=${home.replace(/%/g, "%%").replace(/\$/g, "$$$$")}/.config/rootless-k8s/kubelet-config.yaml"`);
    user.own(root);
    const r = verify(home, runtimeDir, units);
    expect(`${r.stdout}${r.stderr}`).toBe("");
  }, 60_000);

  it("without a journal: the units append to log files, and the rotation timer and its service verify", async () => {
    const combo = COMBOS.find((c) => c.name === "none-containerd-slirp4netns")!;
    const root = join(work, "nojournal");
    const home = join(root, "home");
    const runtimeDir = join(root, "run");
    mkdirSync(runtimeDir, { recursive: true, mode: 0o700 });
    const facts = relocated(await comboFacts(combo), home, runtimeDir);
    const plan = planCombo(combo, { ...facts, systemd: { ...facts.systemd, journal: false } }).plan!;
    expect(plan.logging.to).toBe("file");
    expect(plan.units.logRotate).toBe("rootless-k8s-logrotate.timer");
    const units = materialize(plan, pki ?? (await generatePki(plan)));
    const timer = readFileSync(units.find((u) => u.endsWith("rootless-k8s-logrotate.timer"))!, "utf8");
    const service = readFileSync(units.find((u) => u.endsWith("rootless-k8s-logrotate.service"))!, "utf8");
    expect(timer).toMatch(/^OnUnitActiveSec=5min$/m);
    expect(service).toMatch(/^ExecStart=\S*\/rootless-k8s logs --rotate$/m);
    expect(readFileSync(units.find((u) => u.endsWith(plan.units.target))!, "utf8")).toMatch(/^Wants=.*rootless-k8s-logrotate\.timer/m);
    user.own(root);
    const r = verify(home, runtimeDir, units);
    expect(`${r.stdout}${r.stderr}`).toBe("");
    expect(r.status).toBe(0);
  }, 60_000);

  it("fails a unit that systemd would reject (the check can fail)", async () => {
    const combo = COMBOS.find((c) => c.name === "none-containerd-slirp4netns")!;
    const { root, home, runtimeDir, result } = await planBelow("broken", combo);
    const plan = result.plan!;
    const units = materialize(plan, pki ?? (await generatePki(plan)));
    const owner = units.find((u) => u.endsWith(plan.units.owner))!;
    writeFileSync(owner, readFileSync(owner, "utf8").replace("Type=notify", "Type=notfy"));
    rmSync(join(plan.paths.libexecDir, "rootless-k8s-enter"));
    user.own(root);
    const out = (() => {
      const r = verify(home, runtimeDir, units);
      return `${r.stdout}${r.stderr}`;
    })();
    expect(out).toMatch(/notfy/);
    expect(out).toMatch(/rootless-k8s-enter is not executable/);
  }, 60_000);
});
