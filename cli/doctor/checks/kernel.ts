// Kernel features: devices the user must open, modules only root can load, sysctls, swap, SELinux.
import { fail, ok, skip, warn, type Check } from "../check";
import { modulesFix, sysctlFix } from "../fixes";

const MIN_WATCHES = 524288;
const MIN_INSTANCES = 512;

function octal(mode: number | null): string {
  return mode === null ? "?" : `0${mode.toString(8)}`;
}

export const kernelChecks: Check[] = [
  {
    id: "overlayfs",
    group: "kernel",
    label: "rootless overlayfs",
    run: (f) => {
      const o = f.features.overlayRootless;
      if (o.ok === true)
        return ok(
          o.basis === "mount-test"
            ? "a test mount in a user namespace works"
            : `kernel ${f.kernel.release} mounts overlayfs in user namespaces`,
        );
      if (o.ok === false) return warn("overlayfs cannot be mounted in a user namespace here: the node uses fuse-overlayfs or plain copies");
      return warn(`kernel ${f.kernel.release} is older than 5.11 and no test mount was possible: overlayfs may not work rootless`);
    },
  },
  {
    id: "dev-net-tun",
    group: "kernel",
    label: "/dev/net/tun",
    run: (f) => {
      const d = f.features.devices.netTun;
      if (!d.exists) return fail("missing: slirp4netns and pasta need it for the node's network", { root: modulesFix(["tun"]) });
      if (d.usable) return ok(`mode ${octal(d.mode)}`);
      return fail(
        `mode ${octal(d.mode)}: ${f.user.name} cannot open it, so the node gets no network ("setting up tap tap0: permission denied")`,
        {
          root: ["chmod 0666 /dev/net/tun", `echo 'KERNEL=="tun", MODE="0666"' > /etc/udev/rules.d/60-rootless-k8s-tun.rules`],
        },
      );
    },
  },
  {
    id: "dev-fuse",
    group: "kernel",
    label: "/dev/fuse",
    run: (f) => {
      const d = f.features.devices.fuse;
      const needed = f.features.overlayRootless.ok !== true;
      if (d.exists && d.usable) return ok(`mode ${octal(d.mode)}`);
      if (!needed) return skip(`${d.exists ? `mode ${octal(d.mode)}, not usable` : "missing"}; not needed: rootless overlayfs works`);
      if (!d.exists) return warn("missing: fuse-overlayfs cannot be used", { root: modulesFix(["fuse"]) });
      return warn(`mode ${octal(d.mode)}: ${f.user.name} cannot open it, so fuse-overlayfs cannot be used`, {
        root: ["chmod 0666 /dev/fuse"],
      });
    },
  },
  {
    id: "kernel-modules",
    group: "kernel",
    label: "kernel modules",
    run: (f) => {
      const mods = Object.entries(f.features.modules);
      const missing = mods.filter(([, s]) => s === "missing").map(([m]) => m);
      const unknown = mods.filter(([, s]) => s === "unknown").map(([m]) => m);
      if (missing.length) {
        // kube-proxy only logs this when the sysctl exists, so without the module it says nothing (docs/upstream-notes.md, item 7).
        const bridge = missing.includes("br_netfilter")
          ? "; without br_netfilter, traffic between two pods on the node's bridge skips iptables: Services still work because kube-proxy masquerades them (masqueradeAll), but pods see the bridge's address as the source of Service connections"
          : "";
        return warn(`not loaded: ${missing.join(" ")}; a user cannot load modules${bridge}`, { root: modulesFix(missing) });
      }
      if (unknown.length === mods.length) return warn("cannot tell which modules are present (no /proc/modules or modules.builtin)");
      if (unknown.length) return ok(`${mods.length - unknown.length} present; unknown (no /proc/modules): ${unknown.join(" ")}`);
      return ok(`all ${mods.length} present`);
    },
  },
  {
    id: "inotify",
    group: "kernel",
    label: "inotify limits",
    run: (f) => {
      const w = f.features.inotifyMaxUserWatches;
      const i = f.features.inotifyMaxUserInstances;
      if (w === null || i === null) return skip("not readable");
      const raise: Record<string, number> = {};
      if (w < MIN_WATCHES) raise["fs.inotify.max_user_watches"] = MIN_WATCHES;
      if (i < MIN_INSTANCES) raise["fs.inotify.max_user_instances"] = MIN_INSTANCES;
      const text = `max_user_watches ${w}, max_user_instances ${i}`;
      if (!Object.keys(raise).length) return ok(text);
      return warn(
        `${text}: low for a node: the kubelet's cAdvisor watches every directory of the host's cgroup tree (each v1 hierarchy apart), charged to ${f.user.name}, and the kubelet exits when it runs out ("Failed to start cAdvisor")`,
        { root: sysctlFix("60-rootless-k8s-inotify", raise) },
      );
    },
  },
  {
    id: "sysctls",
    group: "kernel",
    label: "network sysctls",
    run: (f) => {
      const x = f.features;
      const parts = [
        `ip_forward ${x.ipForward ?? "?"} (the node forwards inside its own namespace)`,
        `ip_unprivileged_port_start ${x.ipUnprivilegedPortStart ?? "?"}`,
        `dmesg_restrict ${x.dmesgRestrict ?? "?"}`,
      ];
      return ok(parts.join(", "));
    },
  },
  {
    id: "swap",
    group: "kernel",
    label: "swap",
    run: (f) => {
      const s = f.features.swapTotalKiB;
      if (s === null) return skip("unknown");
      return ok(s === 0 ? "off" : `${Math.round(s / 1024)} MiB (the kubelet runs with failSwapOn: false)`);
    },
  },
  {
    id: "selinux",
    group: "kernel",
    label: "SELinux",
    run: (f) => {
      const s = f.features.selinux;
      if (s === null) return skip("unknown");
      if (s !== "enforcing") return ok(s);
      return warn("enforcing: rootless overlayfs needs kernel 5.13+, and iptables may be denied /run/xtables.lock", null, [
        'if the node\'s kube-proxy logs "/run/xtables.lock: Permission denied": semanage permissive -a iptables_t (moby/moby#41230)',
      ]);
    },
  },
];
