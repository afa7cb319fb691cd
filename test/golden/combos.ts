// Every mode × runtime × network-driver combination, each planned from a real fixture host
// (test/fixtures/hosts/*) with the flags a user would pass. Shared by the golden tests, the
// systemd-analyze verification and the config-field checks.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadManifest } from "../../cli/fetch/manifest";
import type { Facts } from "../../cli/host/facts";
import { gatherFacts } from "../../cli/host/gather";
import { buildPlan, validatePlan } from "../../cli/plan";
import type { Plan, PlanOptions, VersionSet } from "../../cli/plan/plan";
import { versionSetOf } from "../../cli/plan/versions";
import { FIXTURE_HOSTS, fixtureHost, type HostJson } from "../helpers/fixture-host";

export interface Combo {
  /** <mode>-<runtime>-<network>[-variant]: names the golden file. */
  name: string;
  host: string;
  options: PlanOptions;
  /** Plan for this Kubernetes version instead of the built-in set's (the rest of the set unchanged). */
  kubernetes?: string;
  /**
   * Lay Debian 12's recorded `nft --version` or `iptables --version` (test/golden/data/netfilter-debian12)
   * and the executable over a host that records neither: kube-proxy needs one of them.
   */
  netfilter?: "nft" | "iptables";
  /** Lay the recorded rootless Docker 24.0.6 (test/golden/data/docker-rootless-debian12) over the host. */
  rootlessDocker?: boolean;
  /**
   * Lay Debian 13's pasta (test/golden/data/pasta-debian13) over the host: the fixture hosts' own
   * pastas are older than RootlessKit's pasta driver needs.
   */
  pasta?: "debian13";
  /** What the combination is expected to give: a plan, or a refusal (buildPlan or validatePlan). */
  expect: "plan" | "refused";
  why: string;
}

export const COMBOS: Combo[] = [
  {
    name: "delegated-containerd-slirp4netns",
    host: "fedora-40",
    options: {},
    netfilter: "nft",
    expect: "plan",
    why: "Fedora 40: cgroup v2 delegated, slirp4netns installed; nft, no iptables",
  },
  {
    name: "delegated-containerd-pasta",
    host: "fedora-40",
    options: { network: "pasta" },
    netfilter: "nft",
    expect: "plan",
    pasta: "debian13",
    why: "Fedora 40 with Debian 13's pasta (its own 2023_05_09 is older than RootlessKit needs)",
  },
  {
    name: "delegated-containerd-builtin",
    host: "arch",
    options: {},
    netfilter: "nft",
    expect: "plan",
    why: "Arch: delegated, neither slirp4netns nor pasta: RootlessKit 3's built-in driver",
  },
  {
    name: "delegated-crio-slirp4netns",
    host: "debian-12",
    options: { runtime: "crio" },
    expect: "plan",
    why: "Debian 12 with the delegation drop-in and slirp4netns",
  },
  {
    name: "delegated-crio-pasta",
    host: "debian-12",
    options: { runtime: "crio", network: "pasta" },
    expect: "plan",
    pasta: "debian13",
    why: "Debian 12 with Debian 13's pasta",
  },
  {
    name: "delegated-crio-builtin",
    host: "arch",
    options: { runtime: "crio" },
    netfilter: "nft",
    expect: "plan",
    why: "Arch: built-in driver",
  },
  {
    name: "delegated-docker",
    host: "debian-12",
    options: { runtime: "docker" },
    rootlessDocker: true,
    expect: "refused",
    why: "rootless Docker 24.0.6 uses the systemd cgroup driver, which the kubelet cannot share from inside dockerd's namespaces",
  },
  {
    name: "delegated-containerd1.6-slirp4netns",
    host: "debian-12",
    options: { runtimeBin: "/usr/bin/containerd" },
    expect: "refused",
    why: "the host's containerd 1.6.20 (--runtime-bin): Kubernetes 1.35 was the last release to support containerd 1.x",
  },
  {
    name: "delegated-containerd1.6-slirp4netns-k8s1.35",
    host: "debian-12",
    options: { runtimeBin: "/usr/bin/containerd" },
    kubernetes: "1.35.4",
    expect: "plan",
    why: "the same with a Kubernetes 1.35 version set (--manifest): config version 2",
  },
  {
    name: "none-containerd-slirp4netns",
    host: "ubuntu-20.04",
    options: { network: "slirp4netns", taintNone: true },
    netfilter: "iptables",
    expect: "plan",
    why: "Ubuntu 20.04 hybrid: the bundled slirp4netns, tainted",
  },
  {
    name: "none-containerd-slirp4netns-up",
    host: "alpine-3.18",
    options: {},
    netfilter: "iptables",
    expect: "plan",
    why: "Alpine 3.18 (OpenRC, no systemd, no XDG_RUNTIME_DIR): the node runs under `rootless-k8s up`, its services as JSON",
  },
  {
    name: "none-containerd-pasta-supervisor-up",
    host: "fedora-40",
    options: { network: "pasta", supervisor: "up" },
    netfilter: "nft",
    pasta: "debian13",
    expect: "plan",
    why: "Fedora 40 with --supervisor up: a user manager and delegation are there, but up runs the node, so mode none",
  },
  {
    name: "none-containerd-slirp4netns-no-iptables",
    host: "ubuntu-20.04",
    options: { network: "slirp4netns" },
    expect: "refused",
    why: "Ubuntu 20.04's kernel 5.11 without iptables: kube-proxy refuses nftables mode below 5.13",
  },
  {
    name: "none-containerd-pasta",
    host: "debian-12",
    options: { mode: "none", network: "pasta" },
    expect: "plan",
    pasta: "debian13",
    why: "Debian 12 with Debian 13's pasta, asked for mode none (v2, so no failCgroupV1)",
  },
  {
    name: "delegated-containerd-pasta-debian12",
    host: "debian-12",
    options: { network: "pasta" },
    expect: "refused",
    why: 'Debian 12\'s own pasta (2023_03_09, "unknown version"): older than 2023_12_04, it forwards no port with --disable-host-loopback',
  },
  {
    name: "none-containerd-builtin",
    host: "rocky-9",
    options: {},
    netfilter: "nft",
    expect: "plan",
    why: "Rocky 9: cgroup v2 without delegation, no slirp4netns or pasta",
  },
  {
    name: "none-crio-slirp4netns",
    host: "rocky-8",
    options: { runtime: "crio", network: "slirp4netns" },
    netfilter: "iptables",
    expect: "plan",
    why: "Rocky 8: cgroup v1; CRI-O with drop_infra_ctr = false (its dropped infra container's pod cgroup cannot be made in mode none)",
  },
  {
    name: "none-crio-pasta",
    host: "fedora-40",
    options: { mode: "none", runtime: "crio", network: "pasta" },
    pasta: "debian13",
    netfilter: "nft",
    expect: "plan",
    why: "CRI-O in mode none with drop_infra_ctr = false, here on cgroup v2 without delegation",
  },
  {
    name: "none-crio-builtin",
    host: "opensuse-leap-15.6",
    options: { runtime: "crio" },
    netfilter: "iptables",
    expect: "plan",
    why: "openSUSE Leap 15.6: hybrid; CRI-O in mode none with drop_infra_ctr = false",
  },
  {
    name: "none-docker",
    host: "debian-12",
    options: { mode: "none", runtime: "docker" },
    rootlessDocker: true,
    expect: "plan",
    why: "rootless Docker 24.0.6 through cri-dockerd, no cgroup writes",
  },
];

const DOCKER_DATA = join(import.meta.dirname, "data", "docker-rootless-debian12");
const NETFILTER_DATA = join(import.meta.dirname, "data", "netfilter-debian12");
// Debian 13's pasta through a pipe: exit 0 and no text for both probes (data/pasta-debian13/SOURCE.md).
const PASTA_DEBIAN13 = { stdout: "", code: 0 };

/** The recorded outputs and stat answers of the fixture, with the rootless Docker and netfilter ones laid over when asked. */
function overlayFor(combo: Combo): Pick<HostJson, "commands" | "stat"> {
  const json = JSON.parse(readFileSync(join(FIXTURE_HOSTS, combo.host, "host.json"), "utf8")) as HostJson;
  const commands = { ...json.commands };
  const stat = { ...json.stat };
  if (combo.rootlessDocker) {
    commands["docker version"] = { stdout: readFileSync(join(DOCKER_DATA, "docker-version.txt"), "utf8"), code: 0 };
    commands["docker info"] = { stdout: readFileSync(join(DOCKER_DATA, "docker-info.txt"), "utf8"), code: 0 };
  }
  if (combo.netfilter) {
    commands[`${combo.netfilter} --version`] = {
      stdout: readFileSync(join(NETFILTER_DATA, `${combo.netfilter}-version.txt`), "utf8"),
      code: 0,
    };
    stat[`/usr/sbin/${combo.netfilter}`] = { type: "file", mode: "0755" };
  }
  if (combo.pasta) {
    commands["pasta --version"] = PASTA_DEBIAN13;
    commands["pasta --host-lo-to-ns-lo --version"] = PASTA_DEBIAN13;
    stat["/usr/bin/pasta"] = { type: "file", mode: "0755" };
  }
  return { commands, stat };
}

export async function comboFacts(combo: Combo): Promise<Facts> {
  return gatherFacts(fixtureHost(combo.host, overlayFor(combo)));
}

export function pinnedVersions(): VersionSet {
  return versionSetOf(loadManifest(), "amd64");
}

export type ComboResult =
  | { plan: Plan; refusal: null }
  | { plan: null; refusal: { message: string; fix: string | undefined; exitCode: number } };

/** The plan of a combination (validated as install would), or the refusal. */
export function planCombo(combo: Combo, facts: Facts, pinned = pinnedVersions()): ComboResult {
  const versions = combo.kubernetes ? { ...pinned, components: { ...pinned.components, kubernetes: combo.kubernetes } } : pinned;
  try {
    const plan = buildPlan(facts, combo.options, versions);
    validatePlan(plan, facts);
    return { plan, refusal: null };
  } catch (e) {
    const err = e as { message: string; fix?: string; exitCode?: number };
    if (err.exitCode === undefined) throw e;
    return { plan: null, refusal: { message: err.message, fix: err.fix, exitCode: err.exitCode } };
  }
}

/** The same host with its home and runtime folder moved, so rendered paths point at real files. */
export function relocated(facts: Facts, home: string, runtimeDir: string): Facts {
  const f = structuredClone(facts);
  f.user.home = home;
  f.user.runtimeDir.path = runtimeDir;
  return f;
}
