// Fix commands that fit the host: the distribution's package manager, and the root-side snippets
// every check shares (sysctl.d files, modules-load.d, the Delegate= drop-in, linger, AppArmor).
// Root commands carry no `sudo`: they go, as they are, into the one reviewed root script.
import type { Facts, Family } from "../host/facts";
import { profileFileName } from "../host/parse/apparmor";
import type { NetworkPolicyNeed } from "../host/network-policy";

/** Packages by what they provide, per family. */
const PACKAGES = {
  uidmap: { debian: "uidmap", rhel: "shadow-utils", suse: "shadow", arch: "shadow", alpine: "shadow-uidmap" },
  getcap: { debian: "libcap2-bin", rhel: "libcap", suse: "libcap-progs", arch: "libcap", alpine: "libcap-utils" },
  dbusUserSession: { debian: "dbus-user-session", rhel: "dbus-daemon", suse: "dbus-1", arch: "dbus", alpine: "dbus" },
  iptables: { debian: "iptables", rhel: "iptables", suse: "iptables", arch: "iptables", alpine: "iptables" },
  fuseOverlayfs: {
    debian: "fuse-overlayfs",
    rhel: "fuse-overlayfs",
    suse: "fuse-overlayfs",
    arch: "fuse-overlayfs",
    alpine: "fuse-overlayfs",
  },
} satisfies Record<string, Record<Exclude<Family, "other">, string>>;

export type PackageKey = keyof typeof PACKAGES;

/** yum on RHEL-family 7 and older (CentOS 7, RHEL 7, Amazon Linux 2, Oracle Linux 7), dnf after. */
function rhelInstaller(facts: Facts): string {
  const major = Number((facts.distro.versionId ?? "").split(".")[0]);
  const old = facts.distro.id === "amzn" ? major === 2 : Number.isFinite(major) && major > 0 && major <= 7;
  return old ? "yum install -y" : "dnf install -y";
}

/** The root command installing a package on this host, or a plain instruction on unknown families. */
export function installPackage(facts: Facts, key: PackageKey): string {
  const family = facts.distro.family;
  if (family === "other") return `# install the package that provides ${key} with your distribution's package manager`;
  const pkg = PACKAGES[key][family];
  switch (family) {
    case "debian":
      return `apt-get install -y ${pkg}`;
    case "rhel":
      return `${rhelInstaller(facts)} ${pkg}`;
    case "suse":
      return `zypper --non-interactive install ${pkg}`;
    case "arch":
      return `pacman -S --needed --noconfirm ${pkg}`;
    case "alpine":
      return `apk add ${pkg}`;
  }
}

/** Sysctl settings, set now and at every boot, through one sysctl.d file and one reload (re-running the script is harmless). */
export function sysctlFix(file: string, settings: Record<string, string | number>): string[] {
  const lines = Object.entries(settings).map(([k, v]) => `'${k} = ${v}'`);
  return [`printf '%s\\n' ${lines.join(" ")} > /etc/sysctl.d/${file}.conf`, "sysctl --system >/dev/null"];
}

/** Load kernel modules now and at every boot. */
export function modulesFix(modules: readonly string[]): string[] {
  return [`printf '%s\\n' ${modules.join(" ")} > /etc/modules-load.d/rootless-k8s.conf`, `modprobe -a ${modules.join(" ")}`];
}

export function lingerFix(user: string): string {
  return `loginctl enable-linger ${user}`;
}

/** systemd >= 244 can delegate cpuset; older versions reject it in Delegate=. */
export function delegateControllers(systemdVersion: number | null): string {
  return systemdVersion !== null && systemdVersion < 244 ? "cpu io memory pids" : "cpu cpuset io memory pids";
}

export function delegateFix(systemdVersion: number | null): string[] {
  return [
    "mkdir -p /etc/systemd/system/user@.service.d",
    `printf '[Service]\\nDelegate=${delegateControllers(systemdVersion)}\\n' > /etc/systemd/system/user@.service.d/delegate.conf`,
    "systemctl daemon-reload",
  ];
}

/**
 * RootlessKit's own suggested profile (pkg/parent/warn.go): abi 4.0, unconfined, `userns,`, a
 * local include. Its attachment is a glob over the tool's version sets, so the profile keeps
 * covering rootlesskit after an upgrade; the folder belongs to the user, who could replace the
 * binary at an exact path just as well, so the glob grants nothing more.
 */
export function apparmorProfileFix(attach: string, user: string): string[] {
  const name = attach.includes("*") ? `rootless-k8s.${user}.rootlesskit` : profileFileName(attach);
  const file = `/etc/apparmor.d/${name}`;
  const profile = [
    `cat > ${file} <<'EOF'`,
    "# Written by rootless-k8s doctor --root-script: lets RootlessKit create user namespaces.",
    "# ref: https://ubuntu.com/blog/ubuntu-23-10-restricted-unprivileged-user-namespaces",
    "abi <abi/4.0>,",
    "include <tunables/global>",
    "",
    `profile ${name} ${attach} flags=(unconfined) {`,
    "  userns,",
    "",
    "  # Site-specific additions and overrides. See local/README for details.",
    `  include if exists <local/${name}>`,
    "}",
    "EOF",
  ].join("\n");
  return [profile, `apparmor_parser -r ${file}`];
}

/** Switching a host to cgroup v2 is a boot parameter and a reboot: shown, never scripted. */
export function cgroupV2BootFix(facts: Facts): string[] {
  const arg = "systemd.unified_cgroup_hierarchy=1";
  if (facts.kernel.wsl === 2)
    return [`# in %UserProfile%\\.wslconfig on Windows: [wsl2] kernelCommandLine = cgroup_no_v1=all ${arg}`, "# then: wsl.exe --shutdown"];
  switch (facts.distro.family) {
    case "rhel":
      return [`grubby --update-kernel=ALL --args=${arg}`, "reboot"];
    case "debian":
      return [`sed -i 's/^GRUB_CMDLINE_LINUX="/&${arg} /' /etc/default/grub`, "update-grub", "reboot"];
    case "suse":
      return [`sed -i 's/^GRUB_CMDLINE_LINUX_DEFAULT="/&${arg} /' /etc/default/grub`, "grub2-mkconfig -o /boot/grub2/grub.cfg", "reboot"];
    case "arch":
      return [`sed -i 's/^GRUB_CMDLINE_LINUX="/&${arg} /' /etc/default/grub`, "grub-mkconfig -o /boot/grub/grub.cfg", "reboot"];
    default:
      return [`# add ${arg} to the kernel command line of your boot loader, then reboot`];
  }
}

/** What lets the node enforce NetworkPolicies (host/network-policy.ts names the need): root's commands. */
export function networkPolicyFix(facts: Facts, needs: NetworkPolicyNeed): { root: string[] } {
  return { root: needs === "iptables" ? [installPackage(facts, "iptables")] : modulesFix(["br_netfilter"]) };
}
