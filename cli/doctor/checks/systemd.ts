// systemd: the node runs as user services where a user manager answers (else under `rootless-k8s up`),
// and linger so that the node outlives the login session and starts at boot.
import { ok, skip, warn, type Check } from "../check";
import { installPackage, lingerFix } from "../fixes";
import { UP_GIVES_UP } from "../up";

export const systemdChecks: Check[] = [
  {
    id: "user-manager",
    group: "systemd",
    label: "systemd user manager",
    run: (f) => {
      const u = f.user.name;
      if (f.systemd.userManager) return ok(f.user.evaluatedOther ? `user@${f.user.uid}.service is running` : "systemctl --user answers");
      // Not a failure: the node runs under `rootless-k8s up` (cli/plan/supervisor.ts). The fix is for
      // those who want it in systemd (started at boot, real cgroup limits).
      const up = `the node runs under \`rootless-k8s up\` (install starts it detached): ${UP_GIVES_UP}`;
      if (!f.systemd.pid1 && f.kernel.wsl === 2) {
        return warn(`systemd is not running in this WSL distribution: ${up}`, {
          root: ["printf '[boot]\\nsystemd=true\\n' >> /etc/wsl.conf"],
          user: ["# then in Windows PowerShell: wsl.exe --shutdown, and open the distribution again"],
        });
      }
      if (!f.systemd.pid1) return warn(`PID 1 is not systemd: ${up}`);
      return warn(`no systemd user manager for ${u} ("Failed to connect to bus"): ${up}`, {
        root: [lingerFix(u)],
        user: [`# log in as ${u} directly (ssh ${u}@localhost, or machinectl shell ${u}@), not through su or sudo`],
      });
    },
  },
  {
    id: "dbus-user-session",
    group: "systemd",
    label: "D-Bus user session",
    run: (f) => {
      if (f.systemd.dbusUserSession) return ok(`${f.user.runtimeDir.path}/bus`);
      if (!f.systemd.userManager) return skip("no user manager (the node runs under `rootless-k8s up`)");
      return warn(`no session bus at ${f.user.runtimeDir.path}/bus: systemd-run --user and some runtimes need it`, {
        root: [installPackage(f, "dbusUserSession")],
        user: ["systemctl --user enable --now dbus.socket"],
      });
    },
  },
  {
    id: "linger",
    group: "systemd",
    label: "linger",
    run: (f) => {
      if (f.systemd.linger === null) return skip("unknown (no /var/lib/systemd)");
      if (!f.systemd.userManager && !f.systemd.pid1) return skip("PID 1 is not systemd (the node runs under `rootless-k8s up`)");
      if (f.systemd.linger) return ok(`enabled for ${f.user.name}`);
      return warn(`not enabled for ${f.user.name}: the node stops at logout and does not start at boot`, {
        root: [lingerFix(f.user.name)],
      });
    },
  },
];
