// Every subcommand: its name, one-line summary and a lazy loader. Nothing heavy is imported here,
// so `rootless-k8s --version` and `--help` stay at the start-up cost of `node -e 0`.
import type { CommandSpec, Parsed } from "../args";
import type { Context } from "../context";

export interface CommandModule {
  spec: CommandSpec;
  run(ctx: Context, args: Parsed): Promise<number>;
}

export interface CommandEntry {
  name: string;
  summary: string;
  aliases?: string[];
  load(): Promise<CommandModule>;
}

export const commands: CommandEntry[] = [
  { name: "doctor", summary: "Check whether this host can run a rootless node, and how to fix it", load: () => import("./doctor") },
  { name: "install", summary: "Install and start the node in the user's systemd", load: () => import("./install") },
  { name: "start", summary: "Start the installed node and wait until it is Ready", load: () => import("./start") },
  { name: "stop", summary: "Stop the node (its units, pods and namespaces); nothing is removed", load: () => import("./stop") },
  { name: "up", summary: "Run the node in the foreground without systemd (--detach: in the background)", load: () => import("./up") },
  { name: "restart", summary: "Stop the node, then start it and wait until it is Ready", load: () => import("./restart") },
  { name: "status", summary: "Show units, readiness, mode, versions and ports of the node", load: () => import("./status") },
  { name: "logs", summary: "Show the logs of a node component (journalctl --user)", load: () => import("./logs") },
  {
    name: "image",
    summary: "Load image archives (docker save, OCI) into the node's runtime, without a registry",
    load: () => import("./image"),
  },
  { name: "upgrade", summary: "Upgrade the node to another version set, rolling back on failure", load: () => import("./upgrade") },
  { name: "uninstall", summary: "Stop and remove the node (--purge also removes its data)", load: () => import("./uninstall") },
  { name: "join", summary: "Join another host's cluster as a worker node", load: () => import("./join") },
  { name: "token", summary: "Create, list or delete bootstrap tokens for another host's join", load: () => import("./token") },
  {
    name: "ports",
    summary: "Publish Services' and pods' ports on the host (run by rootless-k8s-ports.service)",
    load: () => import("./ports"),
  },
  {
    name: "overlay",
    summary: "Keep the pod network across nodes (run by rootless-k8s-overlay.service)",
    load: () => import("./overlay"),
  },
  {
    name: "netpol",
    summary: "Enforce NetworkPolicies for this node's pods (run by rootless-k8s-netpol.service)",
    load: () => import("./netpol"),
  },
  {
    name: "approver",
    summary: "Approve joined nodes' kubelet serving certificates (run by rootless-k8s-csr-approver.service)",
    load: () => import("./approver"),
  },
  {
    name: "wait",
    summary: "Wait until the API server or etcd is ready (the node's units run it before they start)",
    load: () => import("./wait"),
  },
  {
    name: "components",
    summary: "List the components that would be installed on this host",
    aliases: ["versions"],
    load: () => import("./components"),
  },
  { name: "cache", summary: "Manage the download cache (fetch, list, path, clean)", load: () => import("./cache") },
  { name: "bundle", summary: "Write an offline bundle of every component for air-gapped installs", load: () => import("./bundle") },
  { name: "self-upgrade", summary: "Replace this binary with a newer verified release", load: () => import("./self-upgrade") },
  { name: "completion", summary: "Print shell completions (bash, zsh or fish)", load: () => import("./completion") },
];

export function findCommand(name: string): CommandEntry | undefined {
  return commands.find((c) => c.name === name || c.aliases?.includes(name));
}
