// The namespace owner's command line: RootlessKit with the plan's network and port drivers, the
// copy-ups the node needs, and the child script. Only flags that both RootlessKit 1.1 (Debian 12,
// the end-to-end tests) and 3.x (the pinned version) accept, except the drivers that need 2.x/3.x,
// which the plan only picks on a RootlessKit that has them.
import * as path from "node:path";
import type { Plan } from "../plan/plan";
import { layout } from "./layout";

/** Writable private copies of these host folders (tmpfs + symlinks): the node writes its state there. */
export const COPY_UP = ["/etc", "/run", "/var/lib"];

export function rootlesskitArgs(plan: Plan): string[] {
  const n = plan.network;
  const args = [path.join(plan.paths.binDir, "rootlesskit"), `--state-dir=${plan.paths.rootlesskitStateDir}`];
  switch (n.driver) {
    case "slirp4netns":
      args.push("--net=slirp4netns", `--slirp4netns-binary=${n.binary}`, "--slirp4netns-sandbox=auto", "--slirp4netns-seccomp=auto");
      break;
    case "pasta":
      args.push("--net=pasta", `--pasta-binary=${n.binary}`);
      break;
    case "builtin":
      args.push("--net=gvisor-tap-vsock");
      break;
  }
  args.push(`--mtu=${n.mtu}`, `--cidr=${n.namespaceCidr}`, "--disable-host-loopback", `--port-driver=${n.portDriver}`);
  if (n.portDriver === "builtin") {
    for (const p of n.published) args.push(`--publish=${p.hostIP}:${p.hostPort}:${p.namespacePort}/${p.protocol}`);
  }
  args.push(...COPY_UP.map((d) => `--copy-up=${d}`), "--propagation=rslave", "--pidns", "--ipcns", "--utsns", "--cgroupns");
  if (plan.rootlesskit.evacuateCgroup2) args.push(`--evacuate-cgroup2=${plan.rootlesskit.evacuateCgroup2}`);
  args.push(layout(plan).scripts.child);
  return args;
}
