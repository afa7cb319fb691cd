// Every real output in test/fixtures/corpus (the shared corpus, copied with its sources, plus the
// outputs gathered for this project in gathered/), read by the parsers and compared with the
// reading its case records. Adding a case to a cases.json adds a test.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { distroFromOsRelease } from "../../../cli/host/parse/os-release";
import { dockerRootless, dockerVersion, parseDockerDashVersion, parseDockerInfo, parseDockerVersion } from "../../../cli/host/parse/docker";
import * as v from "../../../cli/host/parse/versions";
import { kernelVersion, wslVersion } from "../../../cli/host/parse/kernel";
import { capabilityGranted, parseControllers, parseGetcap } from "../../../cli/host/parse/procfs";
import { parseSubIdFile } from "../../../cli/host/parse/subid";
import { cgroupMode } from "../../../cli/host/probes/cgroup";
import { parseProcSelfCgroup } from "../../../cli/host/parse/procfs";

const CORPUS = join(import.meta.dirname, "..", "..", "fixtures", "corpus");

interface Case {
  case: string;
  raw_file: string;
  command?: string;
  tool?: string;
  expected: Record<string, unknown>;
}

function cases(file: string): (Case & { raw: string })[] {
  const dir = join(CORPUS, file, "..");
  const list = JSON.parse(readFileSync(join(CORPUS, file), "utf8")) as Case[];
  return list.map((c) => ({ ...c, raw: readFileSync(join(dir, c.raw_file), "utf8") }));
}

describe("os-release corpus (every case)", () => {
  const all = cases("os-release/cases.json");
  it("has the whole corpus", () => expect(all.length).toBeGreaterThanOrEqual(120));
  it.each(all.map((c) => [c.case, c] as const))("%s", (_name, c) => {
    const e = c.expected as {
      id: string;
      version_id?: string | null;
      id_like?: string | null;
      pretty_name?: string | null;
      family: string;
      version_codename?: string | null;
    };
    const d = distroFromOsRelease(c.raw, "/etc/os-release");
    expect(d.id).toBe(e.id);
    expect(d.versionId).toBe(e.version_id ?? null);
    expect(d.idLike).toEqual((e.id_like ?? "").split(/\s+/).filter(Boolean));
    expect(d.prettyName).toBe(e.pretty_name ?? null);
    expect(d.family).toBe(e.family);
    if ("version_codename" in e) expect(d.versionCodename).toBe(e.version_codename ?? null);
  });
});

function readDocker(command: string, raw: string) {
  if (command === "docker --version") return { clientVersion: parseDockerDashVersion(raw), serverVersion: null, reading: null };
  const reading = command === "docker info" ? parseDockerInfo(raw) : parseDockerVersion(raw);
  return { clientVersion: reading.clientVersion, serverVersion: reading.serverVersion, reading };
}

describe("docker outputs (shared corpus and gathered)", () => {
  const all = [...cases("docker/cases.json"), ...cases("gathered/cases.json").filter((c) => c.tool === "docker")];
  it.each(all.map((c) => [c.case, c] as const))("%s", (_name, c) => {
    const e = c.expected;
    const r = readDocker(c.command!, c.raw);
    if ("client_version" in e) expect(r.clientVersion).toBe(e.client_version);
    if ("server_version" in e) expect(r.serverVersion).toBe(e.server_version);
    if (r.reading) {
      if ("rootless" in e) expect(dockerRootless(r.reading)).toBe(e.rootless);
      if ("cgroup_driver" in e) expect(r.reading.cgroupDriver).toBe(e.cgroup_driver);
      if ("cgroup_version" in e) expect(r.reading.cgroupVersion).toBe(e.cgroup_version);
      if ("image_store" in e) expect(r.reading.imageStore).toBe(e.image_store);
      if (e.version) expect(dockerVersion(r.reading)).toBe(v.upstreamVersion(e.version as string));
    } else if (e.version) {
      expect(v.upstreamVersion(r.clientVersion)).toBe(v.upstreamVersion(e.version as string));
    }
  });
});

const VERSION_PARSERS: Record<string, (t: string) => v.ParsedVersion> = {
  containerd: v.parseContainerdVersion,
  runc: v.parseRuncVersion,
  crun: v.parseCrunVersion,
  crio: v.parseCrioVersion,
  rootlesskit: v.parseRootlesskitVersion,
  slirp4netns: v.parseSlirp4netnsVersion,
  pasta: v.parsePastaVersion,
  "fuse-overlayfs": v.parseFuseOverlayfsVersion,
};

describe("tool versions: upstream version without v or distro suffix", () => {
  const shared = ["containerd", "runc", "slirp4netns"].flatMap((t) => cases(`${t}/cases.json`).map((c) => ({ ...c, tool: t })));
  const gathered = cases("gathered/cases.json").filter((c) => c.tool! in VERSION_PARSERS);
  it("covers every runtime the issue names", () => {
    const tools = new Set([...shared, ...gathered].map((c) => c.tool));
    for (const t of Object.keys(VERSION_PARSERS)) expect(tools).toContain(t);
  });
  it.each([...shared, ...gathered].map((c) => [`${c.tool}: ${c.case}`, c] as const))("%s", (_name, c) => {
    const parsed = VERSION_PARSERS[c.tool!]!(c.raw);
    expect(parsed.version).toBe(c.expected.version);
  });
});

describe("iptables: version, backend, and the broken nf_tables 1.8.0-1.8.3", () => {
  it.each(
    cases("gathered/cases.json")
      .filter((c) => c.tool === "iptables")
      .map((c) => [c.case, c] as const),
  )("%s", (_n, c) => {
    const p = v.parseIptablesVersion(c.raw);
    expect(p.version).toBe(c.expected.version);
    expect(p.backend).toBe(c.expected.backend);
    expect(v.isBadIptablesNft(p)).toBe(c.expected.bad_nft);
  });
});

describe("systemctl --version", () => {
  it.each(
    cases("gathered/cases.json")
      .filter((c) => c.tool === "systemd")
      .map((c) => [c.case, c] as const),
  )("%s", (_n, c) => {
    expect(v.parseSystemdVersion(c.raw)).toBe(c.expected.systemd_version);
  });
});

describe("/proc/version: WSL 1, WSL 2 or neither", () => {
  it.each(
    cases("gathered/cases.json")
      .filter((c) => c.tool === "proc-version")
      .map((c) => [c.case, c] as const),
  )("%s", (_n, c) => {
    const release = / version (\S+)/.exec(c.raw)![1]!;
    expect(release).toBe(c.expected.release);
    expect(wslVersion(c.raw, release)).toBe(c.expected.wsl);
    expect(kernelVersion(release)).not.toBeNull();
  });
});

describe("/proc/self/cgroup: v1, hybrid or v2 by shape", () => {
  it.each(
    cases("gathered/cases.json")
      .filter((c) => c.tool === "proc-self-cgroup")
      .map((c) => [c.case, c] as const),
  )("%s", (_n, c) => {
    expect(cgroupMode(c.raw, false, false)).toBe(c.expected.mode);
    expect(parseProcSelfCgroup(c.raw).unifiedPath).toBe(c.expected.unified_path);
  });
});

describe("cgroup.controllers of user@UID.service", () => {
  const all = [...cases("cgroup-controllers/cases.json"), ...cases("gathered/cases.json").filter((c) => c.tool === "cgroup-controllers")];
  it.each(all.map((c) => [c.case, c] as const))("%s", (_n, c) => {
    const ctl = parseControllers(c.raw)!;
    expect(ctl).toEqual(c.expected.controllers);
    const delegated = ["cpu", "memory", "pids"].every((x) => ctl.includes(x as never));
    expect(delegated).toBe(c.expected.delegated ?? c.expected.rootless_cpu_limits_possible);
  });
});

describe("subordinate id lines", () => {
  it.each(cases("subid/cases.json").map((c) => [c.case, c] as const))("%s", (_n, c) => {
    const entries = parseSubIdFile(c.raw).map((e) => ({ name: e.owner, start: e.start, count: e.count }));
    expect(entries).toEqual(c.expected.entries);
  });
});

describe("getcap output", () => {
  it.each(
    cases("gathered/cases.json")
      .filter((c) => c.tool === "getcap")
      .map((c) => [c.case, c] as const),
  )("%s", (_n, c) => {
    const caps = parseGetcap(c.raw);
    expect(Object.fromEntries(caps)).toEqual(c.expected.caps);
    const first = [...caps.values()][0] ?? null;
    expect(capabilityGranted(first, "cap_setuid")).toBe(c.expected.grants === "cap_setuid");
  });
});
