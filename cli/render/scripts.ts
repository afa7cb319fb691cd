// The two helper scripts the units run (POSIX sh, no bashisms):
//   rootless-k8s-child  RootlessKit's child: hides the host's container state that --copy-up
//                       brought in, bind-mounts the node's own /var/lib/kubelet, /var/lib/cni and
//                       /var/log, refuses untranslated Service traffic, then execs the runtime
//                       (whose sd_notify READY=1 makes the owner unit active: Type=notify +
//                       NotifyAccess=all).
//   rootless-k8s-enter  Waits for RootlessKit's child_pid, then nsenters the node's namespaces and
//                       execs the component (as Usernetes' nsenter.sh did).
import * as path from "node:path";
import { supervisorOf, upPaths } from "../plan/supervisor";
import { advertisedIP } from "../plan/node";
import type { Plan } from "../plan/plan";
import { layout } from "./layout";

/** A word for sh: single-quoted unless it is plainly safe. */
export function shQuote(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

const HEADER = (name: string, what: string[]) =>
  [
    "#!/bin/sh",
    `# ${name}: ${what[0]}`,
    ...what.slice(1).map((l) => `# ${l}`),
    "# Written by rootless-k8s from the node plan and rewritten on every install: change the units",
    "# through drop-ins (systemctl --user edit UNIT) instead.",
    "set -eu",
    "",
  ].join("\n");

/** Host paths that --copy-up links into the namespace but must not be shared with the host. */
const HOST_STATE_LINKS = [
  "/etc/cni",
  "/etc/containerd",
  "/etc/containers",
  "/etc/crio",
  "/etc/kubernetes",
  "/run/containerd",
  "/run/containers",
  "/run/crio",
  "/run/crun",
  "/run/flannel",
  "/run/netns",
  "/run/runc",
  "/run/xtables.lock",
  "/var/lib/cni",
  "/var/lib/containerd",
  "/var/lib/containers",
  "/var/lib/etcd",
  "/var/lib/kubelet",
];

/** The kubelet watches /dev/kmsg for OOM kills: in the mount namespace it runs in, /dev/null where it may not open it. */
const KMSG_FOR_KUBELET = [
  "# The kubelet watches /dev/kmsg for OOM kills; a user namespace usually may not open it.",
  "if ! (exec </dev/kmsg) 2>/dev/null; then mount --bind /dev/null /dev/kmsg; fi",
];

/** The runtime's command line inside the namespaces. */
export function runtimeCommand(plan: Plan): string[] {
  const l = layout(plan);
  switch (plan.runtime.name) {
    case "containerd":
      return [plan.runtime.binary, "--config", l.containerdConfig];
    case "crio":
      // _CRIO_ROOTLESS=1: CRI-O's rootless mode, as Usernetes starts CRI-O.
      return ["env", "_CRIO_ROOTLESS=1", plan.runtime.binary, "--config", l.crioConfig];
    case "docker":
      throw new Error("the docker runtime has no RootlessKit child of ours");
  }
}

/**
 * kube-proxy's iptables mode translates only the Service addresses and ports that Services hold;
 * anything else sent to the Service range (a port a Service does not have, an address no Service
 * holds) would be routed out of the namespace through the network driver to the host's network,
 * where it may even connect (conformance: "Services should serve endpoints on same port and
 * different protocols"). Refuse it inside the namespace, after kube-proxy's DNAT (filter OUTPUT
 * for the node's own processes, FORWARD for pods), as kube-proxy's nftables mode does by itself.
 * Not fatal: the node runs without it, only without the guard.
 */
function serviceRangeGuard(plan: Plan): string[] {
  if (plan.proxy.mode !== "iptables") return [];
  const cidr = shQuote(plan.cidrs.services);
  return [
    "# Traffic to the Service range that kube-proxy did not translate (a port or address no Service",
    "# holds) must not leave the namespace through the network driver: refuse it, after kube-proxy's",
    "# DNAT, as kube-proxy's nftables mode does.",
    "for chain in OUTPUT FORWARD; do",
    `  iptables -w -A "$chain" -d ${cidr} -j REJECT ||`,
    `    echo "rootless-k8s-child: could not add the $chain rule that refuses untranslated Service traffic (iptables -A $chain -d ${cidr} -j REJECT)" >&2`,
    "done",
    "",
  ];
}

/**
 * A node that advertises a host address (a worker, or install --node-ip: the kubelet's --node-ip)
 * must have it: the kubelet only takes an address one of its interfaces has, so it goes on the
 * namespace's loopback. Traffic to that address from inside the node then stays in the node, which
 * is what the address stands for (and a program of the host on that address is out of the pods' reach).
 */
function nodeAddress(plan: Plan): string[] {
  const ip = advertisedIP(plan);
  if (ip === plan.network.namespaceIP) return [];
  return [
    "# This node's host address, which the kubelet advertises, on the namespace's loopback.",
    `ip -4 addr replace ${shQuote(`${ip}/32`)} dev lo ||`,
    `  { echo "rootless-k8s-child: could not add ${ip} to the namespace's loopback (ip addr replace ${ip}/32 dev lo): the kubelet will not find its --node-ip" >&2; exit 1; }`,
    "",
  ];
}

export function renderChildScript(plan: Plan): string {
  const l = layout(plan);
  const links = HOST_STATE_LINKS.map((p) => `  ${p}`).join(" \\\n");
  return [
    HEADER("rootless-k8s-child", [
      "RootlessKit runs this as the first process of the node's namespaces.",
      "It gives the node its own state folders, then becomes the container runtime.",
    ]),
    "# --copy-up made /etc, /run and /var/lib private copies whose entries are symlinks to the host's",
    "# files: drop the links that would share state with the host's own runtimes and kubelet.",
    `for p in \\\n${links}; do`,
    '  if [ -L "$p" ]; then rm -f "$p"; fi',
    "done",
    "",
    "bind() {",
    '  mkdir -p "$2"',
    '  mount --bind "$1" "$2"',
    "}",
    `bind ${shQuote(l.data.kubelet)} /var/lib/kubelet`,
    `bind ${shQuote(l.data.cni)} /var/lib/cni`,
    `bind ${shQuote(l.data.log)} /var/log`,
    "",
    ...KMSG_FOR_KUBELET,
    "",
    ...serviceRangeGuard(plan),
    ...nodeAddress(plan),
    `exec ${runtimeCommand(plan).map(shQuote).join(" ")}`,
    "",
  ].join("\n");
}

/** nsenter flags for the namespaces the owner created (dockerd's RootlessKit makes fewer). */
export function namespaceFlags(plan: Plan): string[] {
  const own = plan.runtime.name !== "docker";
  return ["--user", "--preserve-credentials", "--mount", "--net", ...(own ? ["--pid", "--ipc", "--uts", "--cgroup"] : [])];
}

/**
 * The file that names a process inside the node's namespaces: RootlessKit's child_pid for ours,
 * dockerd's pid file for the docker runtime (dockerd runs inside its RootlessKit's namespaces).
 */
export function namespacePidFile(plan: Plan): string {
  return plan.runtime.docker?.pidFile ?? path.join(plan.paths.rootlesskitStateDir, "child_pid");
}

export function renderEnterScript(plan: Plan): string {
  const pidFile = namespacePidFile(plan);
  return [
    HEADER("rootless-k8s-enter", [
      "runs a command inside the node's namespaces, entered through RootlessKit's child pid.",
      "Usage: rootless-k8s-enter COMMAND [ARG...]",
    ]),
    `pid_file=${shQuote(pidFile)}`,
    plan.runtime.docker
      ? "# dockerd writes its pid file once it runs inside its RootlessKit's namespaces."
      : "# RootlessKit writes child_pid once the namespaces and published ports are ready.",
    "tries=0",
    'until [ -s "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; do',
    "  tries=$((tries + 1))",
    '  if [ "$tries" -gt 300 ]; then',
    `    echo "rootless-k8s-enter: $pid_file did not appear in 30s: is ${plan.units.owner} running?" >&2`,
    "    exit 1",
    "  fi",
    "  sleep 0.1",
    "done",
    `exec nsenter ${namespaceFlags(plan).join(" ")} --target "$(cat "$pid_file")" -- "$@"`,
    "",
  ].join("\n");
}

/** The first word after which rootless-k8s-kubelet-ns knows it runs in the kubelet's own namespace. */
const IN_OWN_NAMESPACE = "--in-own-mount-namespace";

/**
 * docker runtime only: the kubelet enters dockerd's namespaces, where /var/lib is the host's and not
 * ours to write, yet the kubelet's device manager keeps its socket under /var/lib/kubelet/device-plugins
 * whatever its --root-dir (pluginapi.DevicePluginPath); it stopped there with "mkdir /var/lib/kubelet:
 * permission denied". So the kubelet gets a mount namespace of its own below dockerd's, with its own
 * /var/lib: a tmpfs whose entries link to dockerd's (as RootlessKit's --copy-up does) and whose kubelet
 * folder is the node's; /var/log/containers is fixed too ("mkdir /var/log/containers: permission
 * denied" next), so its /var/log is the node's. Its --root-dir stays the node's real folder, the path
 * dockerd resolves when it bind-mounts a pod's volumes, and that folder is a shared mount in dockerd's
 * namespace: the volumes the kubelet mounts (Secrets, projected tokens) reach dockerd.
 */
export function renderKubeletNsScript(plan: Plan): string {
  const l = layout(plan);
  const name = "rootless-k8s-kubelet-ns";
  return [
    HEADER(name, [
      "docker runtime: runs the kubelet in a mount namespace of its own, below dockerd's, whose /var/lib is",
      "the node's (the device manager's socket folder /var/lib/kubelet/device-plugins is fixed).",
      `Usage (inside dockerd's namespaces): ${name} KUBELET [ARG...]`,
    ]),
    `state=${shQuote(l.data.kubelet)}`,
    `if [ "\${1:-}" != ${IN_OWN_NAMESPACE} ]; then`,
    "  # In dockerd's mount namespace: the kubelet's folder, a shared mount, so that what the kubelet",
    "  # mounts there from its own namespace (Secret and token volumes) is what dockerd bind-mounts.",
    '  if ! findmnt --mountpoint "$state" >/dev/null 2>&1; then mount --bind "$state" "$state"; fi',
    '  mount --make-shared "$state"',
    `  exec unshare --mount --propagation unchanged "$0" ${IN_OWN_NAMESPACE} "$@"`,
    "fi",
    "shift",
    "",
    "# The kubelet's own namespace. The mount that holds /var/lib stops sending to dockerd's namespace",
    "# (in case it was shared), then /var/lib becomes a tmpfs linking to dockerd's entries.",
    'mount --make-slave "$(findmnt -n -o TARGET --target /var/lib)"',
    `host=${shQuote(l.run.kubeletHostVarLib)}`,
    'mkdir -p "$host"',
    'mount --rbind /var/lib "$host"',
    "mount -t tmpfs -o mode=0755 rootless-k8s /var/lib",
    'for e in "$host"/* "$host"/.[!.]*; do',
    '  if [ -e "$e" ] || [ -L "$e" ]; then ln -s "$e" "/var/lib/${e##*/}"; fi',
    "done",
    "rm -f /var/lib/kubelet",
    "mkdir /var/lib/kubelet",
    'mount --bind "$state" /var/lib/kubelet',
    "# Its /var/log too: it links each container's log into /var/log/containers, a fixed path",
    "# (kuberuntime's ContainerLogsDir); the pods' logs are under the node's real folder (podLogsDir).",
    `mount --bind ${shQuote(l.data.log)} /var/log`,
    "",
    ...KMSG_FOR_KUBELET,
    'exec "$@"',
    "",
  ].join("\n");
}

/** The name of the network driver process RootlessKit runs and the owner unit watches, or null (builtin, docker). */
export function watchedDriver(plan: Plan): string | null {
  return plan.network.binary && !plan.runtime.docker ? path.basename(plan.network.binary) : null;
}

/**
 * The owner unit's watch on its network driver (ExecStartPost=, given RootlessKit's pid), or null
 * where RootlessKit runs no driver process (builtin) or dockerd's RootlessKit owns the network.
 * RootlessKit starts slirp4netns or pasta and never looks at it again: were it to die, the node
 * would run on, Ready, with no network beyond its namespace (no image pulls, no egress). This finds
 * the driver among RootlessKit's children and leaves a loop that, once the driver is gone while the
 * unit is active (not stopping), kills RootlessKit: systemd restarts the namespaces
 * (Restart=on-failure) and every component with them (PartOf=).
 */
export function renderNetwatchScript(plan: Plan): string | null {
  const driver = watchedDriver(plan);
  if (!driver) return null;
  // Under `up`, the supervisor makes this file while it stops the owner on purpose.
  const running =
    supervisorOf(plan) === "up"
      ? `[ ! -e ${shQuote(upPaths(plan.paths).ownerStopping)} ]`
      : `[ "$(systemctl --user is-active ${shQuote(plan.units.owner)} 2>/dev/null)" = active ]`;
  return [
    HEADER("rootless-k8s-netwatch", [
      `ends RootlessKit when its network driver (${driver}) ends under a running node, so that systemd`,
      "restarts the node's namespaces and every component with them. RootlessKit does not watch the driver.",
      "Usage: rootless-k8s-netwatch ROOTLESSKIT_PID (the owner unit's ExecStartPost=, with $MAINPID)",
    ]),
    'owner="$1"',
    "# alive PID: the process exists and is not a zombie (RootlessKit reaps its driver only when it stops).",
    'alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d" " -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }',
    "pid=",
    'children=$(cat /proc/"$owner"/task/*/children 2>/dev/null || true)',
    "for c in $children; do",
    `  case "$(cat "/proc/$c/comm" 2>/dev/null)" in ${shQuote(driver)}*) pid=$c; break ;; esac`,
    "done",
    'if [ -z "$pid" ]; then',
    `  echo "rootless-k8s-netwatch: no ${driver} process under RootlessKit ($owner): its network driver is not watched" >&2`,
    "  exit 0",
    "fi",
    "(",
    '  while alive "$pid"; do sleep 1; done',
    "  # A stop ends the driver too: only a driver that ends while the unit is active is a fault.",
    `  if ${running} && alive "$owner"; then`,
    '    kill -KILL "$owner"',
    `    echo "rootless-k8s-netwatch: ${driver} (pid $pid) ended while the node ran: ended RootlessKit (pid $owner); systemd starts the node's namespaces again" >&2`,
    "  fi",
    ") </dev/null &",
    "",
  ].join("\n");
}

/**
 * docker runtime only: publishes the API server port on the host through the RootlessKit of the
 * user's dockerd, whose state folder (and API socket) dockerd's environment names.
 */
export function renderPublishScript(plan: Plan): string {
  const docker = plan.runtime.docker;
  if (!docker) throw new Error("only the docker runtime publishes through another RootlessKit");
  const rootlessctl = path.join(plan.paths.binDir, "rootlessctl");
  const specs = plan.network.published.map((p) => `${p.hostIP}:${p.hostPort}:${p.namespacePort}/${p.protocol}`);
  return [
    HEADER("rootless-k8s-publish", [
      "publishes the API server on the host through the RootlessKit of the user's rootless dockerd",
      "(rootlessctl add-ports on its API socket); a port published already is left as it is.",
    ]),
    `pid=$(cat ${shQuote(docker.pidFile)})`,
    String.raw`state_dir=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^ROOTLESSKIT_STATE_DIR=//p')`,
    'if [ -z "$state_dir" ]; then',
    '  echo "rootless-k8s-publish: dockerd (pid $pid) does not run in RootlessKit: is it the rootless dockerd?" >&2',
    "  exit 1",
    "fi",
    'socket="$state_dir/api.sock"',
    ...plan.network.published.map((p, i) =>
      [
        `if ! ${shQuote(rootlessctl)} --socket "$socket" list-ports | awk '$2 == "${p.protocol}" && $4 == ${p.hostPort} { found = 1 } END { exit !found }'; then`,
        `  ${shQuote(rootlessctl)} --socket "$socket" add-ports ${specs[i]}`,
        "fi",
      ].join("\n"),
    ),
    "",
  ].join("\n");
}

/**
 * The OCI runtime as containerd's shim runs it, with crun's global --cgroup-manager=disabled in
 * front of the shim's arguments (the shim has no option for extra runtime flags). Null when the
 * plan's runtime needs no flag.
 */
export function ociRuntimeWrapper(plan: Plan): string | null {
  const oci = plan.runtime.ociRuntime;
  if (!oci?.cgroupManager) return null;
  return [
    "#!/bin/sh",
    "# Written by rootless-k8s from the node plan; rewritten on every install.",
    "# Mode none with containerd 2: crun ignores every cgroup path and limit (containerd 2.0 removed disable_cgroup).",
    `exec ${shQuote(oci.path)} --cgroup-manager=${oci.cgroupManager} "$@"`,
    "",
  ].join("\n");
}
