// gatherFacts: everything rootless-k8s needs to know about a host, read through one Host, with all
// probes running at once and every command bounded by a timeout. Read-only: nothing is written
// (the one exception, the overlayfs mount test on kernels older than 5.11, works in a temporary
// folder inside a throw-away namespace and removes it).
import * as path from "node:path";
import type { Arch, Facts } from "./facts";
import { toolDir } from "../xdg";
import type { Host } from "./host";
import type { EvaluatedUser, ProbeContext } from "./probes/context";
import { cgroupFacts } from "./probes/cgroup";
import { distroFacts, featureFacts, kernelFacts } from "./probes/kernel";
import { diskFacts, networkFacts } from "./probes/network";
import { userLimitFacts } from "./probes/limits";
import { runtimeFacts } from "./probes/runtimes";
import { systemdFacts } from "./probes/systemd";
import { resolveUser, userFacts } from "./probes/user";
import { usernsFacts } from "./probes/userns";

export { UnknownUserError } from "./probes/user";

export interface GatherOptions {
  /** NAME or UID of the user to evaluate; default: the user running this process. */
  user?: string;
  /** Folder the node's data will live in; default: $XDG_DATA_HOME/rootless-k8s or ~/.local/share/rootless-k8s. */
  dataDir?: string;
  /** TCP ports the node needs on the host; default DEFAULT_PORTS. */
  ports?: number[];
  /** The user chose the API port, the first of `ports` (--api-port): it does not move when taken. */
  apiPortFixed?: boolean;
  /** The installed node's own published ports (its receipt): held by this user, they are not in the way. */
  ownPorts?: number[];
  /** The rootlesskit binary the node will run (for the AppArmor pre-check); default <dataDir>/versions/current/bin/rootlesskit (the link install maintains). */
  rootlesskitPath?: string;
}

/** Ports the node publishes on the host: the API server and the kubelet. */
export const DEFAULT_PORTS = [6443, 10250];

export function archOf(machine: string): Arch | string {
  if (machine === "x86_64" || machine === "amd64") return "amd64";
  if (machine === "aarch64" || machine === "arm64") return "arm64";
  return machine;
}

/** Where rootless-k8s keeps its data for a user. */
export function defaultDataDir(host: Host, user: EvaluatedUser): string {
  // Another user's XDG variables are unknown here: the default below their home.
  return toolDir(user.other ? {} : host.env, "XDG_DATA_HOME", user.home ?? `/home/${user.name}`);
}

export async function gatherFacts(host: Host, opts: GatherOptions = {}): Promise<Facts> {
  const notes: string[] = [];
  const user = await resolveUser(host, opts.user);
  const dataDir = opts.dataDir ?? defaultDataDir(host, user);
  const ctx: ProbeContext = {
    host,
    user,
    dataDir,
    ports: opts.ports ?? DEFAULT_PORTS,
    apiPortFixed: opts.apiPortFixed ?? false,
    ownPorts: opts.ownPorts ?? [],
    rootlesskitPath: opts.rootlesskitPath ?? path.posix.join(dataDir, "versions/current/bin/rootlesskit"),
    note: (m) => notes.push(m),
  };
  if (!host.canRun)
    notes.push(
      `commands were not run (files read from ${host.root}): tool versions, the user manager and the user-namespace test are unknown`,
    );
  const kernelP = kernelFacts(ctx);
  const distroP = distroFacts(ctx);
  const userP = userFacts(ctx);
  const runtimeDir = userP.then((u) => u.runtimeDir.path ?? `/run/user/${user.uid}`);
  const [distro, kernel, userF, userns, cgroup, systemd, runtimes, features, network, disk, limits] = await Promise.all([
    distroP,
    kernelP,
    userP,
    kernelP.then((k) => usernsFacts(ctx, k.release, k.cmdline)),
    cgroupFacts(ctx),
    runtimeDir.then((d) => systemdFacts(ctx, d)),
    runtimeFacts(ctx),
    Promise.all([kernelP, distroP]).then(([k, d]) => featureFacts(ctx, k, d.id)),
    networkFacts(ctx),
    diskFacts(ctx),
    userLimitFacts(ctx),
  ]);
  if (!(await host.stat("/proc/self")))
    notes.push(`no /proc under ${host.root}: cgroup, device, sysctl and port facts are defaults, not readings`);
  return {
    distro,
    kernel,
    arch: archOf(host.uname().machine),
    user: userF,
    userns,
    cgroup,
    systemd,
    runtimes,
    features,
    network,
    disk,
    limits,
    notes,
  };
}
