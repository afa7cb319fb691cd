// The systemd user units of a node: rootless-k8s.target (WantedBy=default.target),
// the namespace owner (RootlessKit + runtime: Delegate=yes, KillMode=mixed, Type=notify,
// NotifyAccess=all) and one unit per component that enters the owner's namespaces with nsenter,
// Requires=/After=/PartOf= the owner, PartOf= the target, Restart=on-failure with bounded start
// limits. PartOf=, not BindsTo=, ties a component to the owner: when the owner dies and systemd
// restarts it (Restart=on-failure), BindsTo= stops its components for good (systemd 252 stops a
// bound unit as the owner passes through auto-restart, and nothing starts it again), while
// PartOf= restarts each of them after the owner, so the node comes back whole by itself.
// No modprobe, no multi-user.target. Users change units only through drop-ins
// (~/.config/systemd/user/<unit>.d/*.conf) and env.local, which rootless-k8s never writes.
import * as path from "node:path";
import type { Plan } from "../plan/plan";
import { apiServerArgs, controllerManagerArgs, criDockerdArgs, etcdArgs, kubeProxyArgs, kubeletArgs, schedulerArgs } from "./components";
import { layout } from "./layout";
import { pkiPaths } from "./pki";
import { rootlesskitArgs } from "./rootlesskit";
import { watchedDriver } from "./scripts";
import { GATE_TIMEOUT_S, START_LIMIT, startGate } from "../plan/start";
import { admitsNodesFile } from "../plan/on-demand";
import { LOG_FILE_CAP_BYTES, LOG_GENERATIONS, LOG_ROTATE_EVERY, LOG_ROTATE_EVERY_S } from "../plan/logging";
import { supervisorOf, upPaths } from "../plan/supervisor";
import { renderServiceSpec, type NodeService, type NodeTarget } from "./services";
import { commandLine, escapePath, renderUnit, type UnitFile, type UnitSection } from "./systemd";

export const HEADER = [
  "Written by rootless-k8s from the node plan; rewritten on every install.",
  "Change it with a drop-in (systemctl --user edit UNIT) or variables in env.local, never here.",
];

interface ComponentUnit {
  unit: string;
  description: string;
  documentation: string;
  args: string[];
  /** Variable with extra flags, e.g. KUBELET_EXTRA_ARGS, set in env.local (none for the port publisher, which has no flags to add). */
  extraArgs: string | null;
  /** Runs on the host as it is, not inside the node's namespaces (the port publisher). */
  onHost?: boolean;
  /** Started after these (and wanted by this one). */
  after: string[];
  /** Run once the component started (docker runtime: publish the API port). */
  startPost?: string[];
  /** Seconds systemd waits for a graceful stop before SIGKILL (default 30). */
  stopTimeout?: number;
  /** The kubeconfig it reaches the API server with (its start gate waits for /readyz through it). */
  kubeconfig?: string;
}

function environmentFiles(plan: Plan): UnitSection {
  return [
    ["EnvironmentFile", escapePath(plan.paths.envFile)],
    ["EnvironmentFile", `-${escapePath(plan.paths.userEnvFile)}`],
  ];
}

function envFiles(plan: Plan): NodeService["envFiles"] {
  return [
    { path: plan.paths.envFile, optional: false },
    { path: plan.paths.userEnvFile, optional: true },
  ];
}

function logFile(plan: Plan, unit: string): string | null {
  return plan.logging.to === "file" ? path.join(plan.paths.logDir, `${unit}.log`) : null;
}

function output(plan: Plan, unit: string): UnitSection {
  if (plan.logging.to !== "file") return [];
  return [
    ["StandardOutput", `append:${escapePath(path.join(plan.paths.logDir, `${unit}.log`))}`],
    ["StandardError", "inherit"],
  ];
}

/** This rootless-k8s binary, as the units that run it name it (the ports unit's, else ~/.local/bin). */
function selfCommand(plan: Plan): string[] {
  return plan.publish?.command ?? [path.join(plan.paths.home, ".local", "bin", "rootless-k8s")];
}

function componentUnits(plan: Plan): ComponentUnit[] {
  const u = plan.units;
  const v = plan.versions.components;
  const k8s = v.kubernetes ?? "";
  const docs = (c: string) => `https://kubernetes.io/docs/reference/command-line-tools-reference/${c}/`;
  const worker = plan.role === "worker";
  const list: ComponentUnit[] = [
    {
      unit: u.etcd,
      description: `etcd ${v.etcd ?? ""} (the node's key-value store)`,
      documentation: "https://etcd.io/docs/",
      args: etcdArgs(plan),
      extraArgs: "ETCD_EXTRA_ARGS",
      after: [],
    },
    {
      unit: u.apiServer,
      description: `kube-apiserver ${k8s}`,
      documentation: docs("kube-apiserver"),
      args: apiServerArgs(plan),
      extraArgs: "KUBE_APISERVER_EXTRA_ARGS",
      after: [u.etcd],
      // Its graceful shutdown drains requests and watches: on a slow (emulated) machine it took
      // more than 30 s, systemd killed it, the unit failed with result "timeout" and a re-install
      // with a changed plan stopped there.
      stopTimeout: 90,
      ...(plan.runtime.name === "docker" ? { startPost: [layout(plan).scripts.publish] } : {}),
    },
    {
      unit: u.controllerManager,
      description: `kube-controller-manager ${k8s}`,
      documentation: docs("kube-controller-manager"),
      args: controllerManagerArgs(plan),
      extraArgs: "KUBE_CONTROLLER_MANAGER_EXTRA_ARGS",
      after: [u.apiServer],
      kubeconfig: layout(plan).kubeconfigs.controllerManager,
    },
    {
      unit: u.scheduler,
      description: `kube-scheduler ${k8s}`,
      documentation: docs("kube-scheduler"),
      args: schedulerArgs(plan),
      extraArgs: "KUBE_SCHEDULER_EXTRA_ARGS",
      after: [u.apiServer],
      kubeconfig: layout(plan).kubeconfigs.scheduler,
    },
    {
      unit: u.kubelet,
      description: `kubelet ${k8s} (mode ${plan.mode.name})`,
      documentation: docs("kubelet"),
      // docker: through its own mount namespace below dockerd's (cli/render/scripts.ts).
      args: [...(plan.runtime.docker ? [layout(plan).scripts.kubeletNs] : []), ...kubeletArgs(plan)],
      extraArgs: "KUBELET_EXTRA_ARGS",
      after: [...(worker ? [] : [u.apiServer]), ...(u.criDockerd ? [u.criDockerd] : [])],
      kubeconfig: layout(plan).kubeconfigs.kubelet,
    },
    {
      unit: u.kubeProxy,
      description: `kube-proxy ${k8s} (${plan.proxy.mode})`,
      documentation: docs("kube-proxy"),
      args: kubeProxyArgs(plan),
      extraArgs: "KUBE_PROXY_EXTRA_ARGS",
      after: [...(worker ? [] : [u.apiServer]), u.kubelet],
      kubeconfig: layout(plan).kubeconfigs.kubeProxy,
    },
  ];
  // A worker runs no etcd and no control plane: only the node's own components.
  if (worker)
    list.splice(
      0,
      list.findIndex((c) => c.unit === u.kubelet),
    );
  if (u.ports && plan.publish) {
    list.push({
      unit: u.ports,
      description: `publishes NodePort, LoadBalancer and hostPort ports on ${plan.publish.bindAddress} (RootlessKit's port API)`,
      documentation: "https://github.com/rootless-containers/rootlesskit/blob/master/docs/port.md",
      // On the host: RootlessKit's API socket and the API server's published port are there.
      args: [...plan.publish.command, "ports", "run", "--config", layout(plan).portsConfig],
      extraArgs: null,
      onHost: true,
      after: [worker ? u.kubelet : u.apiServer],
      kubeconfig: layout(plan).kubeconfigs.ports,
    });
  }
  if (u.overlay && plan.overlay) {
    list.push({
      unit: u.overlay,
      description: `the pod network across nodes (VXLAN ${plan.overlay.device}, UDP ${plan.overlay.port})`,
      documentation: "https://github.com/flannel-io/flannel/blob/master/Documentation/backends.md#vxlan",
      // Inside the namespaces, where the device is, with the kubelet's credential.
      args: [...selfCommand(plan), "overlay", "run", "--config", layout(plan).overlayConfig],
      extraArgs: null,
      after: [u.kubelet],
      kubeconfig: layout(plan).kubeconfigs.kubelet,
    });
  }
  if (u.networkPolicy && plan.networkPolicy?.enforced) {
    list.push({
      unit: u.networkPolicy,
      description: "enforces NetworkPolicies for this node's pods (iptables rules in the node's namespace)",
      documentation: "https://kubernetes.io/docs/concepts/services-networking/network-policies/",
      // Inside the namespaces, where the pods' packets pass, with the kubelet's credential.
      args: [...selfCommand(plan), "netpol", "run", "--config", layout(plan).networkPolicyConfig],
      extraArgs: null,
      after: [u.kubelet],
      kubeconfig: layout(plan).kubeconfigs.kubelet,
    });
  }
  if (u.csrApprover) {
    list.push({
      unit: u.csrApprover,
      description: "approves the kubelet serving certificates of the nodes that joined (CSRs of signer kubernetes.io/kubelet-serving)",
      documentation: "https://kubernetes.io/docs/reference/access-authn-authz/kubelet-tls-bootstrapping/#certificate-rotation",
      // On the host, through the published API port, with its own certificate.
      args: [...selfCommand(plan), "approver", "run", "--kubeconfig", layout(plan).kubeconfigs.csrApprover],
      extraArgs: null,
      onHost: true,
      after: [u.apiServer],
      kubeconfig: layout(plan).kubeconfigs.csrApprover,
    });
  }
  if (u.criDockerd) {
    list.unshift({
      unit: u.criDockerd,
      description: `cri-dockerd ${v["cri-dockerd"] ?? ""} (CRI for the user's rootless Docker)`,
      documentation: "https://mirantis.github.io/cri-dockerd/",
      args: criDockerdArgs(plan),
      extraArgs: "CRI_DOCKERD_EXTRA_ARGS",
      after: [],
    });
  }
  return list;
}

/**
 * The unit's start gate as a command (cli/plan/start.ts decides which units wait for what): this
 * binary's `wait`, where the component runs (inside the node's namespaces, or on the host), so it
 * reaches its peer by the same address and credential the component will.
 */
function gateCommand(plan: Plan, c: ComponentUnit): string[] | null {
  const gate = startGate(plan, c.unit);
  if (!gate) return null;
  const timeout = ["--timeout", String(GATE_TIMEOUT_S)];
  if (gate.kind === "etcd") {
    const pki = pkiPaths(plan);
    return [
      ...selfCommand(plan),
      "wait",
      "etcd",
      "--endpoint",
      `https://127.0.0.1:${plan.ports.etcdClient}`,
      "--ca",
      pki.cas.etcdCa.cert,
      "--cert",
      pki.certs.apiServerEtcdClient.cert,
      "--key",
      pki.certs.apiServerEtcdClient.key,
      ...timeout,
    ];
  }
  if (!c.kubeconfig) throw new Error(`${c.unit} waits for the API server but has no kubeconfig`);
  // Once a start passed the whole /readyz at the version the API server reports, the next waits
  // without the hooks that only re-create what etcd holds (cli/readiness/bootstrap.ts).
  const marker = gate.skipPolledHooks ? ["--bootstrap-marker", layout(plan).data.bootstrapMarker] : [];
  return [...selfCommand(plan), "wait", "api", "--kubeconfig", c.kubeconfig, ...marker, ...timeout];
}

/** A component as a service: what runs, in what order, how it is restarted and stopped. */
function componentService(plan: Plan, c: ComponentUnit): NodeService {
  const owner = plan.units.owner;
  const enter = c.onHost ? [] : [layout(plan).scripts.enter];
  const gate = gateCommand(plan, c);
  return {
    name: c.unit,
    description: `rootless-k8s: ${c.description}`,
    documentation: c.documentation,
    ready: null,
    pre: gate ? [[...enter, ...gate]] : [],
    exec: [...enter, ...c.args, ...(c.extraArgs ? [{ variable: c.extraArgs }] : [])],
    post: (c.startPost ?? []).map((cmd) => [cmd]),
    requires: [owner],
    after: c.after,
    partOf: [owner],
    restartSec: 3,
    startTimeoutSec: gate ? GATE_TIMEOUT_S + 30 : null,
    stopTimeoutSec: c.stopTimeout ?? 30,
    killMode: "control-group",
    startLimit: START_LIMIT,
    // Skipped (not failed) until the node admits another node (cli/plan/on-demand.ts).
    condition: plan.onDemand?.units.includes(c.unit) ? admitsNodesFile(plan.paths) : null,
    envFiles: envFiles(plan),
    log: logFile(plan, c.unit),
    stopMarker: null,
  };
}

function componentUnit(plan: Plan, svc: NodeService): UnitFile {
  const owner = plan.units.owner;
  return {
    header: HEADER,
    sections: [
      [
        "Unit",
        [
          ["Description", svc.description],
          ["Documentation", svc.documentation],
          ["PartOf", `${plan.units.target} ${svc.partOf.join(" ")}`],
          ["Requires", svc.requires.join(" ")],
          ["Wants", svc.after.length ? svc.after.join(" ") : null],
          ["After", [owner, ...svc.after].join(" ")],
          ["StartLimitIntervalSec", svc.startLimit.intervalSec],
          ["StartLimitBurst", svc.startLimit.burst],
          ["ConditionPathExists", svc.condition ? escapePath(svc.condition) : null],
        ],
      ],
      [
        "Service",
        [
          ["Type", "simple"],
          ...environmentFiles(plan),
          ...svc.pre.map((cmd): [string, string] => ["ExecStartPre", commandLine(cmd)]),
          ["ExecStart", commandLine(svc.exec)],
          ...svc.post.map((cmd): [string, string] => ["ExecStartPost", commandLine(cmd)]),
          ["Restart", "on-failure"],
          ["RestartSec", svc.restartSec],
          ["TimeoutStartSec", svc.startTimeoutSec],
          ["TimeoutStopSec", svc.stopTimeoutSec],
          ["LimitNOFILE", 1048576],
          ...output(plan, svc.name),
        ],
      ],
    ],
  };
}

/**
 * The owner unit's first command: the folder of the node's sockets and pid files made, or tightened
 * to, 0700 at every start. RootlessKit makes its --state-dir with its parents 0755, so after a reboot
 * (XDG_RUNTIME_DIR is a tmpfs) the folder would come back 0755; a link there stops the start, and so
 * does another user's folder (chmod fails). cli/apply/runtime-dir.ts does the same at install.
 */
export function runtimeDirCommand(plan: Plan): string[] {
  return [
    "/bin/sh",
    "-c",
    'if [ -L "$1" ]; then echo "$1 is a symbolic link: remove it" >&2; exit 1; fi; umask 077 && mkdir -p -- "$1" && chmod 0700 -- "$1"',
    "rootless-k8s-runtime-dir",
    plan.paths.runtimeDir,
  ];
}

/** The namespace owner as a service: RootlessKit and the runtime, ready once the runtime serves. */
function ownerService(plan: Plan): NodeService {
  const rt = plan.runtime;
  return {
    name: plan.units.owner,
    description: `rootless-k8s: the node's namespaces (RootlessKit ${plan.rootlesskit.version}, ${plan.network.driver}) and ${rt.name} ${rt.version}`,
    documentation: "https://github.com/rootless-containers/rootlesskit",
    // systemd: the runtime's sd_notify READY=1 (Type=notify); `up`: its CRI socket answers.
    ready: { socket: rt.criSocket },
    pre: [runtimeDirCommand(plan)],
    exec: rootlesskitArgs(plan),
    // RootlessKit does not watch its network driver: this does (render/scripts.ts).
    post: watchedDriver(plan) ? [[layout(plan).scripts.netwatch, { variable: "MAINPID" }]] : [],
    requires: [],
    after: [],
    partOf: [],
    restartSec: 2,
    startTimeoutSec: 120,
    stopTimeoutSec: 60,
    killMode: "mixed",
    startLimit: { intervalSec: 60, burst: 3 },
    condition: null,
    envFiles: envFiles(plan),
    log: logFile(plan, plan.units.owner),
    stopMarker: upPaths(plan.paths).ownerStopping,
  };
}

function ownerUnit(plan: Plan, svc: NodeService): UnitFile {
  return {
    header: HEADER,
    sections: [
      [
        "Unit",
        [
          ["Description", svc.description],
          ["Documentation", svc.documentation],
          ["PartOf", plan.units.target],
          ["StartLimitIntervalSec", svc.startLimit.intervalSec],
          ["StartLimitBurst", svc.startLimit.burst],
        ],
      ],
      [
        "Service",
        [
          // The runtime, RootlessKit's child, sends READY=1 once it serves (containerd and CRI-O
          // both do); NotifyAccess=all lets a process other than the main one say so.
          ["Type", "notify"],
          ["NotifyAccess", "all"],
          ["Delegate", true],
          ["KillMode", svc.killMode],
          // A session keyring of the node's own, never the user's login keyring: the containers
          // keep it (NoNewKeyring, plan.runtime.keyringPerContainer), and only the node holds it.
          ["KeyringMode", "private"],
          ...environmentFiles(plan),
          ...svc.pre.map((cmd): [string, string] => ["ExecStartPre", commandLine(cmd)]),
          ["ExecStart", commandLine(svc.exec)],
          ...svc.post.map((cmd): [string, string] => ["ExecStartPost", commandLine(cmd)]),
          // The target started again each time the owner is up. When the owner dies during a start
          // and systemd restarts it, the start jobs queued behind it end "dependency failed"
          // (Requires=), and nothing else would start those units again (PartOf= restarts only
          // what runs): at boot the node would stay down. --job-mode=fail never turns a pending
          // stop back into a start; "-": its failure does not fail the owner.
          ["ExecStartPost", `-${commandLine(["systemctl", "--user", "start", "--no-block", "--job-mode=fail", plan.units.target])}`],
          ["Restart", "on-failure"],
          ["RestartSec", svc.restartSec],
          ["TimeoutStartSec", svc.startTimeoutSec],
          ["TimeoutStopSec", svc.stopTimeoutSec],
          ["LimitNOFILE", "infinity"],
          ["LimitNPROC", "infinity"],
          ["LimitCORE", "infinity"],
          ["TasksMax", "infinity"],
          ...output(plan, plan.units.owner),
        ],
      ],
    ],
  };
}

function targetUnit(plan: Plan, members: string[]): UnitFile {
  return {
    header: HEADER,
    sections: [
      [
        "Unit",
        [
          ["Description", `rootless-k8s: Kubernetes node ${plan.node.name} of ${plan.user.name} (mode ${plan.mode.name})`],
          ["Wants", members.join(" ")],
        ],
      ],
      ["Install", [["WantedBy", "default.target"]]],
    ],
  };
}

/**
 * Where the units log to files: a oneshot service that rotates them (`rootless-k8s logs --rotate`,
 * cli/apply/log-files.ts) and the timer that runs it every LOG_ROTATE_EVERY, a member of the target.
 */
function logRotateUnits(plan: Plan, timer: string): RenderedUnit[] {
  const service = timer.replace(/\.timer$/, ".service");
  const prefix = plan.paths.prefix ? ["--prefix", plan.paths.prefix] : [];
  const description = `rootless-k8s: rotate the node's log files past ${LOG_FILE_CAP_BYTES / 2 ** 20} MiB (${LOG_GENERATIONS} older generations kept)`;
  return [
    {
      name: service,
      content: renderUnit({
        header: HEADER,
        sections: [
          ["Unit", [["Description", description]]],
          [
            "Service",
            [
              ["Type", "oneshot"],
              ["ExecStart", commandLine([...selfCommand(plan), "logs", "--rotate", ...prefix])],
              ...output(plan, service),
            ],
          ],
        ],
      }),
    },
    {
      name: timer,
      content: renderUnit({
        header: HEADER,
        sections: [
          [
            "Unit",
            [
              ["Description", `${description}, every ${LOG_ROTATE_EVERY}`],
              ["PartOf", plan.units.target],
            ],
          ],
          [
            "Timer",
            [
              ["OnActiveSec", LOG_ROTATE_EVERY],
              ["OnUnitActiveSec", LOG_ROTATE_EVERY],
              ["AccuracySec", "30s"],
            ],
          ],
        ],
      }),
    },
  ];
}

export interface RenderedUnit {
  name: string;
  content: string;
}

/** The node's services in start order: the namespace owner (ours only), then the components. */
export function nodeServices(plan: Plan): NodeService[] {
  const components = componentUnits(plan).map((c) => componentService(plan, c));
  return plan.runtime.name !== "docker" ? [ownerService(plan), ...components] : components;
}

export function renderUnits(plan: Plan): RenderedUnit[] {
  if (supervisorOf(plan) === "up") return renderUpServices(plan);
  const components = componentUnits(plan);
  const timer = plan.units.logRotate ?? null;
  const members = [plan.units.owner, ...components.map((c) => c.unit), ...(timer ? [timer] : [])];
  const units: RenderedUnit[] = [{ name: plan.units.target, content: renderUnit(targetUnit(plan, members)) }];
  const services = nodeServices(plan);
  for (const svc of services)
    units.push({ name: svc.name, content: renderUnit(svc.name === plan.units.owner ? ownerUnit(plan, svc) : componentUnit(plan, svc)) });
  if (timer) units.push(...logRotateUnits(plan, timer));
  return units;
}

/**
 * Under `rootless-k8s up`: the same services as JSON, a file each (so that a changed command
 * restarts that service alone, as a changed unit file does), and the target with the members in
 * start order and the log rotation as a timer of its own.
 */
function renderUpServices(plan: Plan): RenderedUnit[] {
  const services = nodeServices(plan);
  const timer = plan.units.logRotate ?? null;
  const target: NodeTarget = {
    schema: 1,
    name: plan.units.target,
    node: plan.node.name,
    members: services.map((s) => s.name),
    timers: timer
      ? [
          {
            name: timer,
            exec: [...selfCommand(plan), "logs", "--rotate", ...(plan.paths.prefix ? ["--prefix", plan.paths.prefix] : [])],
            everySec: LOG_ROTATE_EVERY_S,
            envFiles: envFiles(plan),
            log: logFile(plan, timer.replace(/\.timer$/, ".service")),
          },
        ]
      : [],
  };
  return [
    { name: plan.units.target, content: renderServiceSpec(target) },
    ...services.map((s) => ({ name: s.name, content: renderServiceSpec(s) })),
  ];
}
