// $XDG_RUNTIME_DIR/rootless-k8s, the node's folder for sockets and pid files: RootlessKit's API
// socket and child_pid (the port publisher and every unit that enters the namespaces trust them),
// the runtime's socket and state, the ports' and the overlay's state files. Nobody but the user
// goes through it (the runtime and the kubelet run as root of the node's user namespace, which is
// the user), so it is made 0700. One that is there already must be a real folder of the user's own:
// a link, or another user's folder, is refused (that user could have put sockets there); the
// user's own is tightened to 0700. The owner unit does the same at each start, since RootlessKit
// would make it 0755 after a reboot (cli/render/units.ts).
import { constants, promises as fsp } from "node:fs";
import * as path from "node:path";
import { ExitCode, UserError } from "../errors";
import { upRuntimeBase } from "../xdg";

export const RUNTIME_DIR_MODE = 0o700;

function refuse(dir: string, why: string, fix: string): never {
  throw new UserError(`refusing to use ${dir} for the node's sockets: ${why}`, { exitCode: ExitCode.Refused, fix });
}

/** Permission bits as chmod takes them: 0700, 1777. */
const modeText = (mode: number) => (mode & 0o7777).toString(8).padStart(4, "0");

/**
 * Makes `dir` a folder of the user's own with mode 0700, in an XDG_RUNTIME_DIR that is the user's
 * own and that nobody else may write in (doctor's runtime-dir check, enforced here too, so that
 * --ignore-check runtime-dir does not open it; a missing one is made 0700). Refuses (exit 3) a link,
 * a non-folder or another user's folder. The checks and the chmod of `dir` work on one open handle
 * (O_NOFOLLOW), so what is checked is what is tightened. Returns what it did.
 */
export async function ensureRuntimeDir(dir: string): Promise<"created" | "tightened" | "kept"> {
  const uid = process.getuid?.() ?? 0;
  const parent = path.dirname(dir);
  const notFolder = () =>
    refuse(dir, `XDG_RUNTIME_DIR (${parent}) is not a folder`, "log in as yourself directly (ssh, a desktop session, not su/sudo)");
  await fsp.mkdir(parent, { recursive: true, mode: RUNTIME_DIR_MODE }).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "EEXIST" || e.code === "ENOTDIR") notFolder();
    throw e;
  });
  // The /tmp folder `up` falls back to (cli/xdg.ts) lies where anyone may put a link first: it is
  // taken only as a real folder (never through a link) that is the user's alone (0700).
  const fallback = parent === upRuntimeBase(uid);
  const up = fallback ? await fsp.lstat(parent) : await fsp.stat(parent);
  if (fallback && up.isSymbolicLink())
    refuse(dir, `${parent} is a symbolic link (someone may have put it there)`, `remove it (rm ${parent}) and run again`);
  if (!up.isDirectory()) notFolder();
  if (fallback && up.uid === uid && up.mode & 0o077)
    refuse(dir, `${parent} is open to others (mode ${modeText(up.mode)})`, `chmod 0700 ${parent}, or remove it and run again`);
  if (up.uid !== uid)
    refuse(
      dir,
      `XDG_RUNTIME_DIR (${parent}) belongs to uid ${up.uid}, not to you`,
      "log in as yourself directly (ssh, a desktop session, not su/sudo), so that XDG_RUNTIME_DIR is your own /run/user/UID",
    );
  if (up.mode & 0o022)
    refuse(
      dir,
      `${up.mode & 0o002 ? "anyone" : "its group"} may write in XDG_RUNTIME_DIR (${parent}, mode ${modeText(up.mode)})`,
      `chmod 0700 ${parent}`,
    );
  const created = await fsp.mkdir(dir, { mode: RUNTIME_DIR_MODE }).then(
    () => true,
    (e: NodeJS.ErrnoException) => {
      if (e.code === "EEXIST") return false;
      throw e;
    },
  );
  const fh = await fsp
    .open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
    .catch(async (e: NodeJS.ErrnoException) => {
      if (e.code !== "ELOOP" && e.code !== "ENOTDIR") throw e;
      const link = await fsp.readlink(dir).catch(() => null);
      return refuse(
        dir,
        link === null ? "it is not a folder" : `it is a symbolic link (to ${link})`,
        `remove it (rm ${dir}) and re-run: rootless-k8s makes the folder itself`,
      );
    });
  try {
    const st = await fh.stat();
    if (st.uid !== uid) {
      refuse(
        dir,
        `it belongs to uid ${st.uid}, not to you: that user could have put sockets or a pid file in it`,
        `have it removed (as root: rm -r ${dir}) and re-run`,
      );
    }
    if ((st.mode & 0o7777) === RUNTIME_DIR_MODE) return created ? "created" : "kept";
    await fh.chmod(RUNTIME_DIR_MODE);
    return created ? "created" : "tightened";
  } finally {
    await fh.close();
  }
}
