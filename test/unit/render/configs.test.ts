// The rendered configs against what upstream accepts:
// - every KubeletConfiguration (v1beta1) and KubeProxyConfiguration (v1alpha1) key is a field of
//   Kubernetes 1.36 and every feature gate a real gate (test/doubles/data/k8s-config-fields.json,
//   read from upstream's Go types at kubernetes-1.36.3, with its sources noted in the file), checked
//   with the same strict decoder the kubelet and kube-proxy doubles use (test/doubles/lib/config-fields.mjs);
// - every containerd key is one containerd's docs list for that config version
//   (containerd-config-keys.json here, transcribed from docs/cri/config.md and the man page);
// - the version 2 config is loaded by the real containerd 1.6 of Debian (`config dump`).
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseToml } from "smol-toml";
import { beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { DEFAULT_EVICTION_HARD, decideEviction } from "../../../cli/plan/eviction";
import type { Plan } from "../../../cli/plan/plan";
import { renderEnv } from "../../../cli/render/index";
import { layout } from "../../../cli/render/layout";
import { renderUnits } from "../../../cli/render/units";
import { kubeProxyConfiguration, kubeletConfiguration } from "../../../cli/render/kube-configs";
import { containerdConfig, crioConfig, renderToml } from "../../../cli/render/runtime-configs";
import { ociRuntimeWrapper } from "../../../cli/render/scripts";
import { unknownFields } from "../../doubles/lib/config-fields.mjs";
import { COMBOS, comboFacts, planCombo } from "../../golden/combos";
import { tempDir } from "../../helpers/temp";

// The project's copy of the field list (see test/doubles/data/SOURCE.md), shared with the doubles.
const FIELDS_FILE = join(import.meta.dirname, "..", "..", "doubles", "data", "k8s-config-fields.json");

interface FieldsDb {
  featureGates: string[];
  [k: string]: unknown;
}

/** Every key path of a TOML document; the name under `runtimes` becomes <runtime>. */
export function tomlKeys(doc: Record<string, unknown>, at: string[] = []): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(doc)) {
    const seg = at[at.length - 1] === "runtimes" ? "<runtime>" : key;
    const path = [...at, seg];
    if (value && typeof value === "object" && !Array.isArray(value)) out.push(...tomlKeys(value as Record<string, unknown>, path));
    else out.push(path.join("."));
  }
  return out;
}

const catalog = JSON.parse(readFileSync(join(import.meta.dirname, "containerd-config-keys.json"), "utf8")) as Record<string, string[]> & {
  common: string[];
};

const plans: { name: string; plan: Plan }[] = [];
beforeAll(async () => {
  for (const combo of COMBOS) {
    const r = planCombo(combo, await comboFacts(combo));
    if (r.plan) plans.push({ name: combo.name, plan: r.plan });
  }
});

describe("Kubernetes 1.36 config fields", () => {
  const db = JSON.parse(readFileSync(FIELDS_FILE, "utf8")) as FieldsDb;

  it("every KubeletConfiguration key of every combination is a v1beta1 field, every gate a real gate", () => {
    expect(plans.length).toBeGreaterThanOrEqual(11);
    for (const { name, plan } of plans) {
      // What the kubelet reads: the rendered YAML, parsed back.
      const doc = YAML.parse(YAML.stringify(kubeletConfiguration(plan))) as Record<string, unknown>;
      expect(doc.apiVersion).toBe("kubelet.config.k8s.io/v1beta1");
      expect(unknownFields(doc, "KubeletConfiguration"), name).toEqual([]);
      for (const gate of Object.keys(doc.featureGates as object)) expect(db.featureGates, `${name}: gate ${gate}`).toContain(gate);
    }
  });

  it("soft eviction thresholds render with their grace periods, as fields the kubelet knows; none without", () => {
    const { plan } = plans[0]!;
    const soft = {
      ...plan,
      kubelet: { ...plan.kubelet, eviction: decideEviction({ evictionSoft: { "memory.available": "1Gi" }, evictionSoftGrace: "2m" }) },
    };
    const doc = YAML.parse(YAML.stringify(kubeletConfiguration(soft))) as Record<string, unknown>;
    expect(doc).toMatchObject({
      evictionHard: DEFAULT_EVICTION_HARD,
      evictionSoft: { "memory.available": "1Gi" },
      evictionSoftGracePeriod: { "memory.available": "2m" },
    });
    expect(unknownFields(doc, "KubeletConfiguration")).toEqual([]);
    const plain = YAML.parse(YAML.stringify(kubeletConfiguration(plan))) as Record<string, unknown>;
    expect(plain.evictionHard).toEqual(DEFAULT_EVICTION_HARD);
    expect(plain).not.toHaveProperty("evictionSoft");
  });

  it("every KubeProxyConfiguration key is a v1alpha1 field, with a real proxy mode", () => {
    for (const { name, plan } of plans) {
      const doc = YAML.parse(YAML.stringify(kubeProxyConfiguration(plan))) as Record<string, unknown>;
      expect(doc.apiVersion).toBe("kubeproxy.config.k8s.io/v1alpha1");
      expect(unknownFields(doc, "KubeProxyConfiguration"), name).toEqual([]);
      const modes = (db.KubeProxyConfigurationEnums as { ProxyMode: { values_from_doc_comment: string[] } }).ProxyMode
        .values_from_doc_comment;
      expect(modes).toContain(doc.mode);
    }
  });

  it("the checker catches a key that is not a field, at any depth", () => {
    expect(
      unknownFields({ apiVersion: "x", cgroupDriverr: "none", authentication: { anonymous: { enable: false } } }, "KubeletConfiguration"),
    ).toEqual(["cgroupDriverr", "authentication.anonymous.enable"]);
    expect(unknownFields({ conntrack: { maxPerCPU: 0 } }, "KubeProxyConfiguration")).toEqual(["conntrack.maxPerCPU"]);
    expect(db.featureGates).not.toContain("SupportNoneCgroupDriver");
  });
});

describe("containerd config keys, per config version, as containerd's docs list them", () => {
  it("every key of every containerd config (v2 and v3) is documented for its version", () => {
    const containerd = plans.filter((p) => p.plan.runtime.name === "containerd");
    expect(new Set(containerd.map((p) => p.plan.runtime.containerdConfigVersion))).toEqual(new Set([2, 3]));
    for (const { name, plan } of containerd) {
      const version = plan.runtime.containerdConfigVersion!;
      const doc = parseToml(renderToml(containerdConfig(plan))) as Record<string, unknown>;
      expect(doc.version).toBe(version);
      const allowed = new Set([...catalog.common, ...catalog[String(version)]!]);
      const unknown = tomlKeys(doc).filter((k) => !allowed.has(k));
      expect(unknown, `${name} (version ${version})`).toEqual([]);
    }
  });

  it("a v3 key in a v2 config is caught (the check can fail)", () => {
    const allowed = new Set([...catalog.common, ...catalog["2"]!]);
    expect(tomlKeys({ plugins: { "io.containerd.cri.v1.runtime": { disable_cgroup: true } } }).filter((k) => !allowed.has(k))).toEqual([
      "plugins.io.containerd.cri.v1.runtime.disable_cgroup",
    ]);
  });
});

describe("mode none with containerd 2: crun with its cgroup manager disabled", () => {
  it("the runc shim runs crun --cgroup-manager=disabled through the rendered wrapper; no dead disable_cgroup key", () => {
    const none = plans.filter(
      (p) => p.plan.runtime.name === "containerd" && p.plan.runtime.containerdConfigVersion === 3 && p.plan.mode.name === "none",
    );
    const delegated = plans.filter((p) => p.plan.runtime.name === "containerd" && p.plan.mode.name === "delegated");
    expect(none.length).toBeGreaterThan(0);
    expect(delegated.length).toBeGreaterThan(0);
    for (const { name, plan } of none) {
      const cri = (containerdConfig(plan) as any).plugins["io.containerd.cri.v1.runtime"];
      expect(cri.disable_cgroup, name).toBeUndefined(); // removed in containerd 2.0: it would be ignored
      expect(cri.containerd.runtimes.runc.options.BinaryName, name).toBe(layout(plan).scripts.ociRuntime);
      expect(plan.runtime.ociRuntime).toEqual({ name: "crun", path: join(plan.paths.binDir, "crun"), cgroupManager: "disabled" });
      const wrapper = ociRuntimeWrapper(plan)!;
      expect(wrapper.split("\n").at(-2)).toBe(`exec ${join(plan.paths.binDir, "crun")} --cgroup-manager=disabled "$@"`);
      expect(plan.runtime.reasons.join(" ")).toMatch(/crun 1\.26 with --cgroup-manager=disabled/);
    }
    for (const { name, plan } of delegated) {
      const options = (containerdConfig(plan) as any).plugins[
        plan.runtime.containerdConfigVersion === 3 ? "io.containerd.cri.v1.runtime" : "io.containerd.grpc.v1.cri"
      ].containerd.runtimes.runc.options;
      expect(options.BinaryName, name).toBe(join(plan.paths.binDir, "runc"));
      expect(ociRuntimeWrapper(plan), name).toBeNull();
    }
  });

  it("the wrapper passes every argument through unchanged, after the flag", () => {
    const { plan } = plans.find((p) => p.plan.runtime.ociRuntime?.cgroupManager)!;
    const dir = tempDir("rk8s-wrapper-");
    const fake = { ...plan, runtime: { ...plan.runtime, ociRuntime: { ...plan.runtime.ociRuntime!, path: join(dir, "it's crun") } } };
    writeFileSync(join(dir, "it's crun"), '#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done\n', { mode: 0o755 });
    writeFileSync(join(dir, "wrapper"), ociRuntimeWrapper(fake)!, { mode: 0o755 });
    const r = spawnSync(join(dir, "wrapper"), ["--root", "/run/x y", "create", "--bundle", "b", "id"], { encoding: "utf8" });
    expect(r.stdout).toBe("[--cgroup-manager=disabled][--root][/run/x y][create][--bundle][b][id]");
  });
});

describe("CRI-O: an infra container for every pod in mode none", () => {
  it("renders drop_infra_ctr = false in mode none (else CRI-O makes the pod cgroup itself), and keeps CRI-O's default when delegated", () => {
    const crio = plans.filter((p) => p.plan.runtime.name === "crio");
    const none = crio.filter((p) => p.plan.mode.name === "none");
    const delegated = crio.filter((p) => p.plan.mode.name === "delegated");
    expect(none.length).toBeGreaterThan(0);
    expect(delegated.length).toBeGreaterThan(0);
    for (const { name, plan } of none) {
      const runtime = (parseToml(renderToml(crioConfig(plan))) as any).crio.runtime;
      expect(runtime.drop_infra_ctr, name).toBe(false);
      expect(runtime.cgroup_manager, name).toBe("cgroupfs");
      expect(runtime.conmon_cgroup, name).toBe("pod");
    }
    for (const { name, plan } of delegated) expect((crioConfig(plan) as any).crio.runtime.drop_infra_ctr, name).toBeUndefined();
  });
});

const containerd16 = spawnSync("containerd", ["--version"], { encoding: "utf8" });
const hasContainerd16 = containerd16.status === 0 && /\s1\.6\./.test(containerd16.stdout);

describe.skipIf(!hasContainerd16)("the real containerd 1.6 of Debian loads the version 2 config", () => {
  const dir = tempDir("rk8s-containerd-");

  it("`containerd --config FILE config dump` accepts it and keeps every setting", () => {
    const { plan } = plans.find((p) => p.plan.runtime.containerdConfigVersion === 2)!;
    const file = join(dir, "config.toml");
    writeFileSync(file, renderToml(containerdConfig(plan)));
    const r = spawnSync("containerd", ["--config", file, "config", "dump"], { encoding: "utf8" });
    expect(r.stderr).not.toMatch(/level=(error|fatal)|failed to load|unknown/i);
    expect(r.status).toBe(0);
    const dumped = parseToml(r.stdout) as Record<string, any>;
    const cri = dumped.plugins["io.containerd.grpc.v1.cri"];
    expect(dumped.version).toBe(2);
    expect(dumped.root).toBe(layout(plan).data.containerd);
    expect(dumped.grpc.address).toBe(plan.runtime.criSocket);
    expect(cri.disable_cgroup).toBe(plan.runtime.disableCgroup);
    expect(cri.disable_apparmor).toBe(true);
    expect(cri.restrict_oom_score_adj).toBe(true);
    expect(cri.containerd.snapshotter).toBe(plan.runtime.snapshotter?.name);
    expect(cri.containerd.runtimes.runc.options.BinaryName).toBe(plan.runtime.ociRuntime?.path);
    expect(cri.containerd.runtimes.runc.options.SystemdCgroup).toBe(false);
    expect(cri.cni.conf_dir).toBe(layout(plan).cniConfDir);
  });

  it("and rejects a config it cannot read (the check can fail)", () => {
    const file = join(dir, "bad.toml");
    writeFileSync(file, 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\ndisable_cgroup = "yes"\n');
    const r = spawnSync("containerd", ["--config", file, "config", "dump"], { encoding: "utf8" });
    expect(r.status).not.toBe(0);
  });
});

describe("the Go components' garbage collector target (issue 33)", () => {
  let plan: Plan;
  beforeAll(async () => {
    const combo = COMBOS.find((c) => c.name === "none-containerd-slirp4netns");
    if (!combo) throw new Error("no combination none-containerd-slirp4netns");
    const r = planCombo(combo, await comboFacts(combo));
    if (!r.plan) throw new Error(`${combo.name} is refused`);
    plan = r.plan;
  });
  it("the env file every unit reads sets GOGC from the plan, and env.local comes after it, so a user's GOGC wins", () => {
    expect(plan.memory?.goGC).toBe(50);
    expect(String(renderEnv(plan).content).split("\n")).toContain("GOGC=50");
    for (const u of renderUnits(plan).filter((x) => x.name.endsWith(".service") && x.content.includes("EnvironmentFile"))) {
      const files = u.content.split("\n").filter((l) => l.startsWith("EnvironmentFile="));
      expect(files, u.name).toEqual([`EnvironmentFile=${plan.paths.envFile}`, `EnvironmentFile=-${plan.paths.userEnvFile}`]);
    }
  });
  it("a plan from an older receipt (no memory field) keeps Go's default: no GOGC line", () => {
    const { memory: _, ...older } = plan;
    expect(renderEnv(older as Plan).content).not.toMatch(/^GOGC=/m);
  });
});
