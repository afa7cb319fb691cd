// `install --dry-run --output DIR`: every rendered file written below DIR at its mirrored target path,
// and nowhere else. DIR must be a new folder, an empty one, or one an earlier --output made (it holds
// the marker file), owned by the user and writable by nobody else (neither its group nor others,
// sticky bit or not); never /, the home folder or a parent of it. Below DIR no symbolic link is
// followed: a link planted there (DIR/home -> /home) would otherwise turn the dry run into a real
// install over the live files.
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { ExitCode, UsageError, UserError } from "../errors";
import { printable } from "../text";
import { ensureDir, writeFileAtomic } from "./files";

export const OUTPUT_MARKER = ".rootless-k8s-output";

/** --output's own checks, before anything runs: no control characters, never /, HOME or a parent of HOME. */
export function checkOutputDir(dir: string, home: string, command = "install"): void {
  const d = path.resolve(dir);
  if (/[\u0000-\u001f\u007f-\u009f]/.test(d)) throw new UsageError(`--output "${printable(d)}" contains a control character`, command);
  const h = path.resolve(home);
  const rel = path.relative(d, h);
  const why =
    d === "/"
      ? "the root folder"
      : d === h
        ? "the home folder"
        : !rel.startsWith("..") && !path.isAbsolute(rel)
          ? "a parent of the home folder"
          : null;
  if (why)
    throw new UsageError(
      `--output ${d} is ${why}: the dry run writes files there at their real paths; give it a folder of its own, e.g. --output /tmp/rootless-k8s-plan`,
      command,
    );
}

/** Permission bits as chmod takes them: 0755, 1777. */
function modeText(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

function refuse(dir: string, why: string, fix: string): never {
  throw new UserError(`refusing to write below --output ${dir}: ${why}`, { exitCode: ExitCode.Refused, fix });
}

/** A writer below `dir` that refuses every symlink on the way; creates `dir` (or accepts an earlier output). */
export async function openOutputDir(dir: string): Promise<{
  mkdir(target: string, mode: number): Promise<void>;
  write(target: string, content: string | Uint8Array, mode: number): Promise<void>;
}> {
  const root = path.resolve(dir);
  const uid = process.getuid?.() ?? 0;
  const st = await fsp.lstat(root).catch(() => null);
  if (st) {
    if (st.isSymbolicLink()) refuse(root, `${root} is a symbolic link`, "give --output a real folder (or the folder the link points at)");
    if (!st.isDirectory()) refuse(root, "it exists and is not a folder", "choose a new folder");
    if (st.uid !== uid) refuse(root, `it belongs to uid ${st.uid}, not to you`, "choose a folder of your own");
    // Others (even with the sticky bit, as /tmp has it) or the group could plant a file or a link in
    // it while the dry run writes: the folder must be writable by its owner only.
    const open = st.mode & 0o002 ? "anyone" : st.mode & 0o020 ? "its group" : null;
    if (open) {
      refuse(
        root,
        `${open} may write in it (mode ${modeText(st.mode)}): another user could plant a link or a file there`,
        `chmod 0755 ${root}, or give --output a new folder (it is made 0755)`,
      );
    }
    const names = await fsp.readdir(root);
    if (names.length && !names.includes(OUTPUT_MARKER)) {
      refuse(root, `it is not empty and no earlier --output made it (no ${OUTPUT_MARKER} in it)`, "choose a new or empty folder");
    }
  } else await ensureDir(root, 0o755);
  await writeFileAtomic(
    path.join(root, OUTPUT_MARKER),
    "Written by rootless-k8s install --dry-run --output: the rendered files of a node plan, at their mirrored paths.\n",
    { mode: 0o644 },
  );

  /** Walks from root to `target` (mirrored below root), creating missing folders, refusing any link or non-folder. */
  const walk = async (target: string, lastMode: number | null): Promise<string> => {
    const parts = path.resolve("/", target).split("/").filter(Boolean);
    const dirs = lastMode === null ? parts.slice(0, -1) : parts;
    let cur = root;
    for (const [i, part] of dirs.entries()) {
      cur = path.join(cur, part);
      const s = await fsp.lstat(cur).catch(() => null);
      const mode = lastMode !== null && i === dirs.length - 1 ? lastMode : 0o755;
      if (!s) {
        await fsp.mkdir(cur, { mode });
        await fsp.chmod(cur, mode);
      } else if (s.isSymbolicLink()) refuse(root, `${cur} is a symbolic link`, `remove it (rm ${cur}) or choose a new folder`);
      else if (!s.isDirectory()) refuse(root, `${cur} is not a folder`, "choose a new folder");
      else if (lastMode !== null && i === dirs.length - 1) await fsp.chmod(cur, mode);
    }
    return path.join(root, ...parts);
  };
  return {
    async mkdir(target, mode) {
      await walk(target, mode);
    },
    async write(target, content, mode) {
      const file = await walk(target, null);
      const s = await fsp.lstat(file).catch(() => null);
      if (s && !s.isFile()) refuse(root, `${file} is not a plain file`, `remove it (rm ${file}) or choose a new folder`);
      await writeFileAtomic(file, content, { mode });
    },
  };
}
