// Publishing Services' and pods' ports in the plan (issue 12): on for RootlessKit's builtin port
// driver, off for pasta and docker with the reason, the bind address from --publish-address, the
// node's address as RootlessKit's target, the privileged-port choice, what each setup keeps of the
// client's address, and plans older than the field.
import { describe, expect, it } from "vitest";
import { selfCommand } from "../../../cli/self-command";
import { optionsFromPlan } from "../../../cli/apply/upgrade";
import { parseCommandArgs } from "../../../cli/args";
import { installOptions, spec as installSpec } from "../../../cli/commands/install";
import { buildPlan, unitNames } from "../../../cli/plan";
import { describePlan } from "../../../cli/plan/describe";
import type { Plan } from "../../../cli/plan/plan";
import { userErrorFrom } from "../../helpers/errors";
import { baseFacts, rootlessDocker, upstreamVersions, withFacts } from "./facts-builder";

const versions = upstreamVersions();
const pastaFacts = () =>
  withFacts(baseFacts(), (x) => {
    x.runtimes.slirp4netns = null;
    x.runtimes.pasta = { version: "2024_09_06.6b38f07", raw: "pasta 2024_09_06.6b38f07", path: "/usr/bin/pasta", hostLoToNsLo: false };
  });

describe("plan.publish", () => {
  it("is on with the builtin port driver: 0.0.0.0, to the node's address, the host's addresses as LoadBalancer ingress", () => {
    const plan = buildPlan(baseFacts(), {}, versions);
    expect(plan.network.portDriver).toBe("builtin");
    expect(plan.publish).toMatchObject({
      enabled: true,
      bindAddress: "0.0.0.0",
      childIP: plan.network.namespaceIP,
      privilegedPorts: "refuse",
      ingressIPs: ["192.168.1.20"],
      command: ["/home/alice/.local/bin/rootless-k8s"],
    });
    expect(plan.units.ports).toBe("rootless-k8s-ports.service");
    const reasons = plan.publish!.reasons.join("\n");
    expect(reasons).toMatch(/every NodePort, each LoadBalancer Service's ports and every pod hostPort, TCP and UDP, on 0\.0\.0\.0/);
    expect(reasons).toMatch(/refused, not shifted.*sysctl net\.ipv4\.ip_unprivileged_port_start=PORT/);
  });

  it("--publish-address 127.0.0.1: bound to loopback, and the LoadBalancer ingress says so", () => {
    const p = buildPlan(baseFacts(), { publishAddress: "127.0.0.1" }, versions).publish!;
    expect(p).toMatchObject({ enabled: true, bindAddress: "127.0.0.1", ingressIPs: ["127.0.0.1"] });
    expect(p.reasons.join("\n")).toMatch(/this host only/);
    const noAddress = withFacts(baseFacts(), (x) => (x.network.addresses = []));
    expect(buildPlan(noAddress, {}, versions).publish!.ingressIPs).toEqual(["127.0.0.1"]);
  });

  it("keeps the client's address for TCP with RootlessKit 3 and iptables, never for UDP, and says why not otherwise", () => {
    const plan = buildPlan(baseFacts(), {}, versions);
    expect(plan.rootlesskit.version).toMatch(/^3\./);
    expect(plan.publish!.keepsSourceIP).toEqual({ tcp: true, udp: false });
    expect(plan.publish!.reasons.join("\n")).toMatch(/IP_TRANSPARENT.*externalTrafficPolicy: Local/);
    expect(plan.publish!.reasons.join("\n")).toMatch(/UDP: pods see an address of the node.*rootlesskit#592/);

    const old = { ...versions, components: { ...versions.components, rootlesskit: "2.3.4" } };
    const p2 = buildPlan(baseFacts(), {}, old).publish!;
    expect(p2.keepsSourceIP).toEqual({ tcp: false, udp: false });
    expect(p2.reasons.join("\n")).toMatch(
      /TCP: pods see an address of the node, not the client's: RootlessKit 2\.3\.4 connects from the node's own address/,
    );

    const nft = withFacts(baseFacts(), (x) => {
      x.runtimes.iptables = null;
      x.runtimes.nft = { version: "1.0.6", raw: "", path: "/usr/sbin/nft" };
    });
    const p3 = buildPlan(nft, {}, versions).publish!;
    expect(p3.keepsSourceIP.tcp).toBe(false);
    expect(p3.reasons.join("\n")).toMatch(/needs iptables inside the namespace/);
  });

  it("is off with pasta (no port API, and pasta forwards only listening ports), with no ports unit", () => {
    const plan = buildPlan(pastaFacts(), { network: "pasta" }, versions);
    expect(plan.network.driver).toBe("pasta");
    expect(plan.publish!.enabled).toBe(false);
    expect(plan.publish!.reasons.join("\n")).toMatch(/implicit port driver has no port API.*\n.*not reachable from the host/);
    expect(plan.units.ports).toBeNull();
  });

  it("is off with the docker runtime: dockerd's RootlessKit and its ports are dockerd's", () => {
    const rootless = withFacts(baseFacts(), (x) => {
      x.cgroup.mode = "v2";
      x.runtimes.docker = rootlessDocker({ cgroupDriver: "systemd", cgroupVersion: "2" });
    });
    const plan = buildPlan(rootless, { runtime: "docker" }, versions);
    expect(plan.publish!.enabled).toBe(false);
    expect(plan.publish!.reasons[0]).toMatch(/dockerd's own RootlessKit/);
    expect(plan.units.ports).toBeNull();
  });

  it("runs the command it is given (install: this very program), and refuses one with a control character", () => {
    // Under node (a source checkout, these tests) node itself with its flags and the script; a release binary runs alone.
    expect(selfCommand()[0]).toBe(process.execPath);
    expect(selfCommand().at(-1)).toMatch(/^\//);
    const plan = buildPlan(baseFacts(), { selfCommand: ["/opt/rk8s/rootless-k8s"] }, versions);
    expect(plan.publish!.command).toEqual(["/opt/rk8s/rootless-k8s"]);
    expect(userErrorFrom(() => buildPlan(baseFacts(), { selfCommand: ["/opt/x\n/rootless-k8s"] }, versions)).message).toMatch(
      /control character/,
    );
  });

  it("a plan from a receipt older than publishing has no ports unit, and describes and upgrades as before", () => {
    const plan = buildPlan(baseFacts(), { publishAddress: "127.0.0.1" }, versions);
    const old = { ...plan, units: { ...plan.units } } as Plan;
    delete old.publish;
    delete old.units.ports;
    expect(unitNames(old).ports).toBeNull();
    expect(describePlan(old).some((l) => l.startsWith("Services"))).toBe(false);
    expect(optionsFromPlan(old, {}).publishAddress).toBeUndefined();
    expect(optionsFromPlan(plan, {}).publishAddress).toBe("127.0.0.1");
    expect(describePlan(plan).find((l) => l.startsWith("Services"))).toMatch(
      /published on 127\.0\.0\.1 by rootless-k8s-ports\.service; pods see the client's own address over TCP \(Services with externalTrafficPolicy: Local\), an address of the node over UDP/,
    );
  });
});

describe("install --publish-address", () => {
  const parse = (...argv: string[]) => installOptions(parseCommandArgs(installSpec, argv), { cwd: "/", env: {} });

  it("takes 0.0.0.0 or 127.0.0.1 into the plan options; absent: the plan's default", () => {
    expect(parse("--publish-address", "127.0.0.1").plan.publishAddress).toBe("127.0.0.1");
    expect(parse("--publish-address", "0.0.0.0").plan.publishAddress).toBe("0.0.0.0");
    expect(parse().plan.publishAddress).toBeUndefined();
  });

  it("refuses any other address as bad usage (exit 2)", () => {
    const e = userErrorFrom(() => parse("--publish-address", "192.168.1.20"));
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe('--publish-address must be one of 0.0.0.0, 127.0.0.1 (got "192.168.1.20")');
  });
});
