// The user the node runs as: not root, a home, a runtime dir from a real login, subordinate ids,
// and privileged newuidmap/newgidmap.
import { fail, ok, skip, warn, type Check, type CheckResult } from "../check";
import { upRuntimeBase } from "../../xdg";
import type { Facts, IdMapBinary, SubIdFacts } from "../../host/facts";
import { installPackage } from "../fixes";

const MIN_SUBIDS = 65536;

const LOGIN_HINT = (user: string) =>
  `log in as ${user} directly (ssh ${user}@localhost, or machinectl shell ${user}@), not through su or sudo`;

function rangeText(s: SubIdFacts): string {
  return s.ranges.map((r) => `${r.start}-${r.start + r.count - 1}`).join(", ");
}

function subIdCheck(kind: "uid" | "gid"): Check {
  const file = `/etc/sub${kind}`;
  return {
    id: `sub${kind}`,
    group: "user",
    label: `subordinate ${kind.toUpperCase()}s`,
    blocks: true,
    run: (f) => {
      const s = kind === "uid" ? f.user.subuid : f.user.subgid;
      const user = f.user.name;
      const start = s.nextFreeStart;
      const add = [`touch ${file}`, `usermod --add-sub${kind}s ${start}-${start + MIN_SUBIDS - 1} ${user}`];
      if (s.ranges.length === 0) {
        const where = s.file === null ? `${file} does not exist` : `no line for ${user} or ${f.user.uid} in ${file}`;
        return fail(`${where}: user namespaces get no ${kind}s to map`, { root: add });
      }
      const from = s.source === "getsubids" ? " (from NSS, via getsubids)" : "";
      const many = s.ranges.length > 1 ? `${s.ranges.length} ranges, ` : "";
      if (s.total < MIN_SUBIDS) {
        return fail(`${many}only ${s.total} ${kind}s (${rangeText(s)})${from}: at least ${MIN_SUBIDS} are needed for container images`, {
          root: add,
        });
      }
      return ok(`${rangeText(s)}: ${many}${s.total} ${kind}s${from}`);
    },
  };
}

function overlapResult(f: Facts): CheckResult {
  const problems: string[] = [];
  const fixes: string[] = [];
  for (const [kind, s] of [
    ["uid", f.user.subuid],
    ["gid", f.user.subgid],
  ] as const) {
    const others = s.overlapsOtherUsers.map((o) => `${o.owner} (${o.range.start}-${o.range.start + o.range.count - 1})`);
    const real = s.overlapsRealIds.map((r) => `${r.name} (${r.id})`);
    if (others.length) problems.push(`sub${kind} range shared with ${others.join(", ")}`);
    if (real.length) problems.push(`sub${kind} range contains real ${kind}s of ${real.join(", ")}`);
    if (others.length || real.length) {
      const del = s.ranges.map((r) => `--del-sub${kind}s ${r.start}-${r.start + r.count - 1}`).join(" ");
      fixes.push(`usermod ${del} --add-sub${kind}s ${s.nextFreeStart}-${s.nextFreeStart + MIN_SUBIDS - 1} ${f.user.name}`);
    }
  }
  if (f.user.subuid.ranges.length === 0 && f.user.subgid.ranges.length === 0) return skip("no ranges to compare");
  if (!problems.length) return ok("no overlap with other users' ranges or with real ids");
  return warn(`${problems.join("; ")}: containers of both could read each other's files`, { root: fixes });
}

function idMapCheck(tool: "newuidmap" | "newgidmap"): Check {
  const cap = tool === "newuidmap" ? "cap_setuid" : "cap_setgid";
  return {
    id: tool,
    group: "user",
    label: tool,
    blocks: true,
    run: (f) => {
      const b: IdMapBinary = f.user[tool];
      if (!b.path) return fail(`${tool} not found: RootlessKit cannot map the subordinate ids`, { root: [installPackage(f, "uidmap")] });
      if (b.setuidRoot) return ok(`${b.path} is setuid root`);
      if (b.privileged) return ok(`${b.path} has file capabilities ${b.capabilities}`);
      if (!b.capabilitiesKnown) {
        return warn(`${b.path} is not setuid root, and its file capabilities are unknown (getcap is missing or was not run)`, {
          root: [installPackage(f, "getcap")],
          user: [`/usr/sbin/getcap ${b.path}   # should print ${cap}=ep`],
        });
      }
      return fail(`${b.path} is neither setuid root nor holds ${cap}: "write to uid_map failed: Operation not permitted"`, {
        root: [`chown root:root ${b.path}`, `chmod u+s ${b.path}`],
      });
    },
  };
}

/** "XDG_RUNTIME_DIR=/run/user/1000" as set, or the path alone when it is the default (not set, or --user). */
function runtimeDirName(f: Facts): string {
  const rt = f.user.runtimeDir;
  return rt.fromEnv ? `XDG_RUNTIME_DIR=${rt.path}` : `${rt.path}`;
}

/**
 * XDG_RUNTIME_DIR holds the node's sockets and pid files (RootlessKit's API socket and child_pid,
 * containerd's socket): a folder its group or others may write in (sticky bit or not) lets another
 * user create $XDG_RUNTIME_DIR/rootless-k8s, or what is in it, before the node does. systemd-logind
 * makes /run/user/UID 0700. Null when it is the user's own and writable by the user alone.
 */
function runtimeDirUnsafe(f: Facts): CheckResult | null {
  const rt = f.user.runtimeDir;
  if (rt.mode === null) return null;
  const who = rt.mode & 0o002 ? "anyone" : rt.mode & 0o020 ? "its group" : null;
  if (!who) return null;
  const mode = rt.mode.toString(8).padStart(4, "0");
  return fail(`${who} may write in ${runtimeDirName(f)} (mode ${mode}): another user could plant the node's sockets or pid files there`, {
    user: [`chmod 0700 ${rt.path}`],
  });
}

export const userChecks: Check[] = [
  {
    id: "not-root",
    group: "user",
    label: "ordinary user",
    blocks: true,
    run: (f) => {
      if (f.user.uid === 0 || (f.user.isRoot && !f.user.evaluatedOther)) {
        return fail("running as root: a rootless node runs as an ordinary user", {
          user: [`# ${LOGIN_HINT("<user>")}, then run rootless-k8s doctor; or, as root: rootless-k8s doctor --user <user>`],
        });
      }
      const who = `${f.user.name} (uid ${f.user.uid})`;
      return ok(f.user.evaluatedOther ? `evaluating ${who} on its behalf` : who);
    },
  },
  {
    id: "home",
    group: "user",
    label: "home folder",
    run: (f) => {
      if (!f.user.home) return fail("HOME is not set", { user: [`export HOME=/home/${f.user.name}`] });
      if (f.user.homeWritable === false) return fail(`${f.user.home} does not exist or is not writable by ${f.user.name}`);
      return ok(f.user.home);
    },
  },
  {
    id: "runtime-dir",
    group: "user",
    label: "XDG_RUNTIME_DIR",
    run: (f) => {
      const rt = f.user.runtimeDir;
      const u = f.user.name;
      const expected = `/run/user/${f.user.uid}`;
      const su = f.user.viaSuOrSudo ? " (this shell came through su or sudo)" : "";
      // The node's sockets and pid files go there: it must be the user's own, and writable by the user alone.
      if (rt.exists && !rt.ownedByUser) {
        return fail(`${runtimeDirName(f)} belongs to another user (uid ${rt.uid})${su}`, { user: [`# ${LOGIN_HINT(u)}`] });
      }
      const unsafe = rt.exists ? runtimeDirUnsafe(f) : null;
      if (unsafe) return unsafe;
      if (f.user.evaluatedOther) {
        return rt.exists
          ? ok(`${rt.path} exists`)
          : warn(`${expected} does not exist yet: it appears when ${u} logs in, or at boot with linger`, {
              root: [`loginctl enable-linger ${u}`],
            });
      }
      if (rt.fromEnv && rt.exists && rt.ownedByUser && rt.writable !== false) return ok(rt.path!);
      if (!rt.fromEnv && rt.exists && rt.ownedByUser) {
        return warn(`XDG_RUNTIME_DIR is not set, though ${expected} exists${su}`, {
          user: [`export XDG_RUNTIME_DIR=${expected}`, `# better: ${LOGIN_HINT(u)}`],
        });
      }
      // No user manager, so the node runs under `rootless-k8s up` (cli/plan/supervisor.ts), which needs no session.
      if (!f.systemd.userManager)
        return warn(
          `${rt.path ?? expected} does not exist${su}: the node runs under \`rootless-k8s up\` and keeps its sockets in ${upRuntimeBase(f.user.uid)} (made 0700)`,
          { root: [`loginctl enable-linger ${u}`], user: [`# or, to run it in systemd: ${LOGIN_HINT(u)}`] },
        );
      return fail(`${rt.path ?? expected} does not exist${su}: there is no login session for ${u}`, {
        root: [`loginctl enable-linger ${u}`],
        user: [`# ${LOGIN_HINT(u)}`],
      });
    },
  },
  subIdCheck("uid"),
  subIdCheck("gid"),
  { id: "subid-overlap", group: "user", label: "subid overlap", run: overlapResult },
  idMapCheck("newuidmap"),
  idMapCheck("newgidmap"),
];
