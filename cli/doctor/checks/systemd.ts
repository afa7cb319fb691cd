// systemd: the node's components are user services, so the user needs a running user manager,
// and linger so that the node outlives the login session and starts at boot.
import { fail, ok, skip, warn, type Check } from "../check";
import { installPackage, lingerFix } from "../fixes";

export const systemdChecks: Check[] = [
  {
    id: "user-manager",
    group: "systemd",
    label: "systemd user manager",
    run: (f) => {
      const u = f.user.name;
      if (f.systemd.userManager) return ok(f.user.evaluatedOther ? `user@${f.user.uid}.service is running` : "systemctl --user answers");
      if (!f.systemd.pid1 && f.kernel.wsl === 2) {
        return fail("systemd is not running in this WSL distribution", {
          root: ["printf '[boot]\\nsystemd=true\\n' >> /etc/wsl.conf"],
          user: ["# then in Windows PowerShell: wsl.exe --shutdown, and open the distribution again"],
        });
      }
      if (!f.systemd.pid1) return fail("PID 1 is not systemd: the node runs as systemd user services and needs a systemd host");
      return fail(`no systemd user manager for ${u} ("Failed to connect to bus")`, {
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
      if (f.systemd.linger) return ok(`enabled for ${f.user.name}`);
      return warn(`not enabled for ${f.user.name}: the node stops at logout and does not start at boot`, {
        root: [lingerFix(f.user.name)],
      });
    },
  },
];
