// One presenter for check outcomes (doctor, doctor --node, install, the dry run, upgrade), one
// policy for what stops install and upgrade, one rule for what the cgroups allow, and the
// doctor --node checks as pure functions of the node's facts.
import { describe, expect, it } from "vitest";
import { runChecks, type CheckOutcome } from "../../../cli/doctor/check";
import { blockingFailures } from "../../../cli/doctor/blocking";
import { nodeChecks, type NodeFacts } from "../../../cli/doctor/checks/node";
import { diagnose } from "../../../cli/doctor/index";
import { showOutcomes } from "../../../cli/doctor/present";
import { renderReport } from "../../../cli/doctor/report";
import { cgroupAllows, delegatesCore, missingCore } from "../../../cli/host/cgroups";
import { gatherFacts } from "../../../cli/host/gather";
import { buildPlan } from "../../../cli/plan/index";
import { versionSetOf } from "../../../cli/plan/versions";
import { loadManifest } from "../../../cli/fetch/manifest";
import { makeStyle } from "../../../cli/ui/output";
import { fixtureHost } from "../../helpers/fixture-host";

const plain = makeStyle(false);

const outcome = (o: Partial<CheckOutcome> & Pick<CheckOutcome, "id" | "status">): CheckOutcome => ({
  group: "network",
  label: o.id,
  blocks: false,
  summary: `${o.id} summary`,
  fix: null,
  ...o,
});

describe("showOutcomes: the one presenter", () => {
  it("aligns every line of a multi-line fix (the AppArmor heredoc) under its first, root's apart from the user's", async () => {
    const facts = await gatherFacts(fixtureHost("ubuntu-24.04"));
    const apparmor = diagnose(facts).outcomes.find((o) => o.id === "apparmor-userns")!;
    const profile = apparmor.fix!.root[0]!;
    expect(profile.split("\n").length).toBeGreaterThan(5);
    const lines = showOutcomes([apparmor], plain, { name: "id" });
    expect(lines[0]).toBe(`  FAIL  apparmor-userns  ${apparmor.summary}`);
    const indent = " ".repeat(10 + "apparmor-userns".length);
    const first = lines.findIndex((l) => l.startsWith(`${indent}fix (root): `));
    expect(lines[first]).toBe(`${indent}fix (root): ${profile.split("\n")[0]}`);
    // every further line of the heredoc sits under the command's first character, unchanged
    profile
      .split("\n")
      .slice(1)
      .forEach((l, i) => expect(lines[first + 1 + i]).toBe(`${indent}${" ".repeat("fix (root):".length)} ${l}`));
    expect(lines).toContain(`${indent}${" ".repeat("fix (root):".length)} ${apparmor.fix!.root[1]}`);
  });

  it("is what doctor's report prints for each check, under the label", async () => {
    const facts = await gatherFacts(fixtureHost("ubuntu-24.04"));
    const d = diagnose(facts);
    const report = renderReport(facts, d, plain);
    const width = Math.max(...d.outcomes.map((o) => o.label.length));
    for (const l of showOutcomes(d.outcomes, plain, { width })) expect(report.split("\n")).toContain(l);
  });

  it("shows no fix for ok and skip, details dimmed under the summary, and the id when asked", () => {
    const lines = showOutcomes(
      [
        outcome({ id: "a", status: "ok", fix: { root: ["x"], user: [] } }),
        outcome({ id: "bb", status: "warn", label: "long label", details: ["more"], fix: { root: [], user: ["do it", "then this"] } }),
      ],
      plain,
      { name: "id" },
    );
    expect(lines).toEqual([
      "    ok  a   a summary",
      "  warn  bb  bb summary",
      "            more",
      "            fix (you):  do it",
      "                        then this",
    ]);
  });
});

describe("blockingFailures: the one policy of install and upgrade", () => {
  const outcomes = [
    outcome({ id: "ports", status: "fail" }),
    outcome({ id: "subuid", status: "fail" }),
    outcome({ id: "inotify", status: "warn" }),
  ];
  it("stops on every failure not named with --ignore-check; warnings never stop", () => {
    expect(blockingFailures(outcomes, []).map((o) => o.id)).toEqual(["ports", "subuid"]);
    expect(blockingFailures(outcomes, ["subuid"]).map((o) => o.id)).toEqual(["ports"]);
  });
});

describe("cgroupAllows: the one cgroup rule", () => {
  const uid = 1000;
  it("delegated only on v2 with cpu, memory and pids all delegated", () => {
    expect(cgroupAllows({ mode: "v2", userControllers: ["cpu", "io", "memory", "pids"] }, uid)).toEqual({
      mode: "delegated",
      reason: "cgroup v2 with cpu io memory pids delegated to user@1000.service",
    });
    expect(cgroupAllows({ mode: "v2", userControllers: ["memory", "pids"] }, uid)).toEqual({
      mode: "none",
      reason: "cgroup v2, but user@1000.service has memory pids: cpu not delegated (cpu, memory and pids must all be)",
    });
    expect(cgroupAllows({ mode: "v2", userControllers: null }, uid).reason).toContain("was not found");
    expect(cgroupAllows({ mode: "hybrid", userControllers: ["cpu", "memory", "pids"] }, uid).mode).toBe("none");
    expect(cgroupAllows({ mode: "v1", userControllers: null }, uid).reason).toBe("cgroup v1: controllers cannot be delegated to a user");
    expect(missingCore(["cpu"])).toEqual(["memory", "pids"]);
    expect(delegatesCore("v2", ["pids", "memory", "cpu"])).toBe(true);
  });

  it("doctor's verdict and the plan's mode give the same reason, word for word", async () => {
    const manifest = loadManifest({});
    for (const name of ["debian-12", "ubuntu-22.04", "rocky-8", "debian-11"]) {
      const facts = await gatherFacts(fixtureHost(name));
      const d = diagnose(facts);
      const plan = buildPlan(facts, {}, versionSetOf(manifest, "amd64"));
      expect(plan.mode.reasons[0], name).toBe(d.reasons[0]);
      expect(plan.mode.name, name).toBe(d.mode);
    }
  });
});

describe("doctor --node checks, pure functions of the node's facts", () => {
  const healthy: NodeFacts = {
    user: "alice",
    node: "box",
    mode: "delegated",
    units: {
      owner: "rootless-k8s-rootlesskit.service",
      target: "rootless-k8s.target",
      states: [{ unit: "rootless-k8s.target", activeState: "active" }],
    },
    ready: { api: true, node: true, problems: [] },
    ownerCgroup: { path: "/user.slice/u/rk", v2: true, controllers: ["cpu", "memory", "pids"], subtreeControl: ["cpu", "memory", "pids"] },
    snapshotter: { runtime: "containerd", criSocket: "/run/c.sock", planned: "overlayfs", used: "overlayfs", error: null },
    ports: { kubeconfig: "/k/admin.conf", answers: [{ host: "127.0.0.1", hostPort: 6443, namespacePort: 6443, status: 200, error: null }] },
    nodePorts: "31000-31099",
    clientAddress: {
      keeps: { tcp: true, udp: false },
      reasons: ["TCP: pods see the client's own address: …", "UDP: pods see an address of the node, …"],
    },
    linger: true,
    eviction: { observing: true, detail: "memory 900 MiB available, disk 40% available, images 40% available", expected: true },
  };
  const by = (f: NodeFacts) => Object.fromEntries(runChecks(nodeChecks, f).map((o) => [o.id, o]));

  it("a healthy node passes every check, each in the node group", () => {
    const r = runChecks(nodeChecks, healthy);
    expect(r.map((o) => [o.id, o.status])).toEqual([
      ["node-units", "ok"],
      ["node-ready", "ok"],
      ["node-cgroup", "ok"],
      ["node-snapshotter", "ok"],
      ["node-ports", "ok"],
      ["node-client-address", "ok"],
      ["node-eviction", "ok"],
      ["node-linger", "ok"],
    ]);
    expect(new Set(r.map((o) => o.group))).toEqual(new Set(["node"]));
    expect(by(healthy)["node-ports"]!.summary).toBe("127.0.0.1:6443 → 6443: HTTP 200; Services' NodePorts from 31000-31099");
  });

  it("the on-demand units of a single node, inactive, are no failure; failed they are (#33)", () => {
    const states = [
      { unit: "rootless-k8s.target", activeState: "active" },
      { unit: "rootless-k8s-overlay.service", activeState: "inactive" },
      { unit: "rootless-k8s-csr-approver.service", activeState: "inactive" },
    ];
    const waiting = ["rootless-k8s-overlay.service", "rootless-k8s-csr-approver.service"];
    expect(by({ ...healthy, units: { ...healthy.units, states, waiting } })["node-units"]).toMatchObject({
      status: "ok",
      summary:
        "1 units active; rootless-k8s-overlay.service, rootless-k8s-csr-approver.service start once the node admits another (rootless-k8s token create)",
    });
    const failed = states.map((s) => (s.unit === "rootless-k8s-overlay.service" ? { ...s, activeState: "failed" } : s));
    expect(by({ ...healthy, units: { ...healthy.units, states: failed, waiting } })["node-units"]).toMatchObject({
      status: "fail",
      summary: "rootless-k8s-overlay.service failed",
    });
    // Once the node admits others (nothing waits), an inactive one is a failure.
    expect(by({ ...healthy, units: { ...healthy.units, states, waiting: [] } })["node-units"]!.status).toBe("fail");
  });

  it("names what is wrong and how to fix it", () => {
    const bad = by({
      ...healthy,
      units: { ...healthy.units, states: [{ unit: "rootless-k8s-kubelet.service", activeState: "failed" }] },
      ownerCgroup: { ...healthy.ownerCgroup!, subtreeControl: ["memory"] },
      snapshotter: { ...healthy.snapshotter, used: "native" },
      ports: {
        ...healthy.ports,
        answers: [{ host: "127.0.0.1", hostPort: 6443, namespacePort: 6443, status: null, error: "ECONNREFUSED" }],
      },
      linger: false,
    });
    expect(bad["node-units"]).toMatchObject({ status: "fail", summary: "rootless-k8s-kubelet.service failed" });
    expect(bad["node-cgroup"]).toMatchObject({
      status: "fail",
      summary: "/user.slice/u/rk/cgroup.subtree_control lacks cpu, pids: the kubelet cannot create pod cgroups",
    });
    expect(bad["node-snapshotter"]).toMatchObject({ status: "fail", summary: "containerd uses native, the plan says overlayfs" });
    expect(bad["node-ports"]).toMatchObject({
      status: "fail",
      summary: "1 of 1 published ports do not answer: 127.0.0.1:6443 → 6443: ECONNREFUSED",
    });
    expect(bad["node-linger"]).toMatchObject({ status: "warn", fix: { root: ["loginctl enable-linger alice"], user: [] } });
    const missing = by({ ...healthy, ownerCgroup: { ...healthy.ownerCgroup!, controllers: ["cpu"] } });
    expect(missing["node-cgroup"]!.summary).toBe("/user.slice/u/rk lacks memory, pids (has: cpu)");
    expect(missing["node-cgroup"]!.fix!.root.join("\n")).toContain("Delegate=");
  });

  it("says which client address pods see through the published ports, with the plan's reasons", () => {
    const r = by(healthy)["node-client-address"]!;
    expect(r.summary).toBe(
      "pods see the client's own address over TCP (Services with externalTrafficPolicy: Local), an address of the node over UDP",
    );
    expect(r.details).toEqual(healthy.clientAddress!.reasons);
    const neither = by({ ...healthy, clientAddress: { keeps: { tcp: false, udp: false }, reasons: [] } })["node-client-address"]!;
    expect(neither.summary).toBe("pods see an address of the node over TCP, an address of the node over UDP");
  });

  it("says whether the eviction manager observes the node: fails when the plan expected it, warns when the plan left it off", () => {
    const blind = { observing: false, detail: "the kubelet's summary lacks the node's file system", expected: true };
    expect(by({ ...healthy, eviction: blind })["node-eviction"]).toMatchObject({
      status: "fail",
      summary: "the kubelet's summary lacks the node's file system",
      fix: { user: ["rootless-k8s logs kubelet", "rootless-k8s restart"] },
    });
    expect(by({ ...healthy, eviction: { ...blind, expected: false } })["node-eviction"]!.status).toBe("warn");
    expect(by({ ...healthy, eviction: null })["node-eviction"]!.status).toBe("skip");
    expect(
      by({ ...healthy, eviction: { observing: null, detail: "the kubelet's summary: HTTP 503", expected: true } })["node-eviction"],
    ).toMatchObject({
      status: "skip",
      summary: "not read: the kubelet's summary: HTTP 503",
    });
  });

  it("skips what does not apply: the cgroup in mode none, a runtime's own storage choice, no published port", () => {
    const r = by({
      ...healthy,
      mode: "none",
      ownerCgroup: null,
      snapshotter: { ...healthy.snapshotter, planned: null, used: null },
      ports: { ...healthy.ports, answers: [] },
    });
    expect([r["node-cgroup"]!.status, r["node-snapshotter"]!.status, r["node-ports"]!.status]).toEqual(["skip", "skip", "skip"]);
    expect(by({ ...healthy, clientAddress: null })["node-client-address"]).toMatchObject({
      status: "skip",
      summary: "rootless-k8s publishes no Service port on this node (see the plan's Services line)",
    });
    expect(by({ ...healthy, ports: { ...healthy.ports, answers: null } })["node-ports"]!.summary).toBe("cannot read /k/admin.conf");
  });
});
