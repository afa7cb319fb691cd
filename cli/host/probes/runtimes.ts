// Container tools on the host and their versions, read from the plain text they print. Only tools
// found on PATH (or in the sbin folders) are run, all at once, each with a timeout.
import type { DockerFacts, IptablesFacts, PastaFacts, RuntimeFacts, ToolFacts } from "../facts";
import { dockerPidFile, dockerRootless, dockerSocketPath, dockerVersion, parseDockerDashVersion, parseDockerInfo } from "../parse/docker";
import { parseIpAddr } from "../parse/ip-json";
import * as v from "../parse/versions";
import { findTool, outputOf, probeRun, type ProbeContext } from "./context";

type Parser = (text: string) => v.ParsedVersion;

function firstLine(text: string, re: RegExp): string | null {
  return (
    text
      .split("\n")
      .find((l) => re.test(l))
      ?.trim() ?? null
  );
}

async function tool(ctx: ProbeContext, name: string, args: string[], parse: Parser, rawLine: RegExp): Promise<ToolFacts | null> {
  const p = await findTool(ctx.host, name);
  return p ? toolAt(ctx, p, args, parse, rawLine) : null;
}

/** The tool found at `p`, read from what `p ARGS` prints. */
async function toolAt(ctx: ProbeContext, p: string, args: string[], parse: Parser, rawLine: RegExp): Promise<ToolFacts> {
  const text = outputOf(await probeRun(ctx, p, args));
  return { path: p, version: parse(text).version, raw: firstLine(text, rawLine) };
}

/**
 * `docker info` asks the daemon for everything it knows: 3 s was too short on a loaded machine (a VM
 * under emulation, 2026-12-07: doctor then said the daemon did not answer, while a run right after
 * read it). A daemon that does not answer at all costs doctor this long.
 */
const DOCKER_INFO_TIMEOUT_MS = 10_000;

async function docker(ctx: ProbeContext): Promise<DockerFacts | null> {
  const p = await findTool(ctx.host, "docker");
  if (!p) return null;
  // One `docker info` says it all on Docker 19.03+ (client block, server version, cgroup driver,
  // security options); `docker --version` only when it printed no client version (older clients).
  const info = await probeRun(ctx, p, ["info"], DOCKER_INFO_TIMEOUT_MS);
  const reading = parseDockerInfo(outputOf(info));
  if (!reading.clientVersion) {
    const dash = await probeRun(ctx, p, ["--version"]);
    reading.clientVersion = parseDockerDashVersion(outputOf(dash));
  }
  const env = ctx.host.env;
  const socket = env.DOCKER_HOST ?? (env.XDG_RUNTIME_DIR ? `unix://${env.XDG_RUNTIME_DIR}/docker.sock` : null);
  const rootless = dockerRootless(reading);
  return {
    path: p,
    version: dockerVersion(reading),
    raw: firstLine(outputOf(info), /Server Version:|^\s*Version:/),
    clientVersion: v.upstreamVersion(reading.clientVersion),
    serverVersion: v.upstreamVersion(reading.serverVersion),
    serverReachable: reading.serverAnswered,
    rootless,
    cgroupDriver: reading.cgroupDriver,
    cgroupVersion: reading.cgroupVersion,
    imageStore: reading.imageStore,
    socket,
    socketOwner: socket?.startsWith("unix://") ? ((await ctx.host.stat(dockerSocketPath(socket)))?.uid ?? null) : null,
    namespaceAddress: rootless && reading.serverAnswered && socket ? await dockerNamespaceAddress(ctx, socket) : null,
  };
}

/**
 * The address of rootless dockerd's network namespace, as the node on --runtime docker will see it:
 * entered through dockerd's pid (dockerPidFile), its tap0 holds the address (10.0.2.100/24 unless DOCKERD_ROOTLESS_ROOTLESSKIT_FLAGS gave --cidr).
 * Read as Docker's docs enter it: `nsenter -U --preserve-credentials -n -t PID`; nothing is changed.
 */
export async function dockerNamespaceAddress(ctx: ProbeContext, socket: string): Promise<string | null> {
  const pid = (await ctx.host.readText(dockerPidFile(dockerSocketPath(socket))))?.trim();
  const [nsenter, ip] = await Promise.all([findTool(ctx.host, "nsenter"), findTool(ctx.host, "ip")]);
  if (!pid || !/^\d+$/.test(pid) || !nsenter || !ip) return null;
  const r = await probeRun(ctx, nsenter, ["-U", "--preserve-credentials", "-n", "-t", pid, ip, "-j", "-4", "addr", "show", "dev", "tap0"]);
  return parseIpAddr(outputOf(r))?.ipv4[0] ?? null;
}

async function pasta(ctx: ProbeContext): Promise<PastaFacts | null> {
  const p = await findTool(ctx.host, "pasta");
  if (!p) return null;
  const [t, feature] = await Promise.all([
    toolAt(ctx, p, ["--version"], v.parsePastaVersion, /^pasta /),
    probeRun(ctx, p, ["--host-lo-to-ns-lo", "--version"]),
  ]);
  return { ...t, hostLoToNsLo: feature.code === 0 };
}

async function iptables(ctx: ProbeContext): Promise<IptablesFacts | null> {
  const p = await findTool(ctx.host, "iptables");
  if (!p) return null;
  const text = outputOf(await probeRun(ctx, p, ["--version"]));
  const parsed = v.parseIptablesVersion(text);
  return { path: p, version: parsed.version, raw: firstLine(text, /^iptables/), backend: parsed.backend };
}

export async function runtimeFacts(ctx: ProbeContext): Promise<RuntimeFacts> {
  const [dockerF, containerd, crio, runc, crun, rootlesskit, slirp4netns, pastaF, fuseOverlayfs, iptablesF, nft, nsenter] =
    await Promise.all([
      docker(ctx),
      tool(ctx, "containerd", ["--version"], v.parseContainerdVersion, /containerd/),
      tool(ctx, "crio", ["--version"], v.parseCrioVersion, /^Version:|crio version \d/),
      tool(ctx, "runc", ["--version"], v.parseRuncVersion, /runc version/),
      tool(ctx, "crun", ["--version"], v.parseCrunVersion, /crun version/),
      tool(ctx, "rootlesskit", ["--version"], v.parseRootlesskitVersion, /rootlesskit version/),
      tool(ctx, "slirp4netns", ["--version"], v.parseSlirp4netnsVersion, /slirp4netns version/),
      pasta(ctx),
      tool(ctx, "fuse-overlayfs", ["--version"], v.parseFuseOverlayfsVersion, /fuse-overlayfs: version/),
      iptables(ctx),
      tool(ctx, "nft", ["--version"], v.parseNftVersion, /^nftables/),
      tool(ctx, "nsenter", ["--version"], v.parseUtilLinuxVersion, /util-linux/),
    ]);
  return {
    docker: dockerF,
    containerd,
    crio,
    runc,
    crun,
    rootlesskit,
    slirp4netns,
    pasta: pastaF,
    fuseOverlayfs,
    iptables: iptablesF,
    nft,
    nsenter,
  };
}
