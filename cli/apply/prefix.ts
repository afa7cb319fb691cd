// A --prefix is rootless-k8s's own folder (issue 34, finding 1): install takes one that is new,
// empty, or already rootless-k8s's (its marker, or the receipt of an earlier install there), and
// refuses a folder of the user's own, such as ~/Documents, whose files would mix with the node's
// and which uninstall --purge would then empty. Read-only: install writes the marker with its files.
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { ExitCode, UserError } from "../errors";
import { PREFIX_MARKER } from "../plan/paths";
import { receiptPath } from "./receipt";

/** Refuses (exit 3) a --prefix that exists and is neither empty nor rootless-k8s's. */
export async function checkPrefixFolder(prefix: string): Promise<void> {
  const dir = path.resolve(prefix);
  const st = await fsp.stat(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return null;
    throw e;
  });
  if (!st) return;
  const refuse = (why: string, fix: string) => new UserError(`refusing --prefix ${dir}: ${why}`, { exitCode: ExitCode.Refused, fix });
  if (!st.isDirectory()) throw refuse("it is not a folder", `choose a new folder, e.g. --prefix ${dir}-k8s`);
  const names = await fsp.readdir(dir);
  if (names.length === 0 || names.includes(PREFIX_MARKER)) return;
  if (
    await fsp.stat(receiptPath(dir)).then(
      () => true,
      () => false,
    )
  )
    return;
  throw refuse(
    `it holds ${names.length} entr${names.length === 1 ? "y" : "ies"} (${names.slice(0, 3).join(", ")}${names.length > 3 ? ", ..." : ""}) and no rootless-k8s node: the node's folders would mix with them`,
    `choose a new or empty folder, e.g. --prefix ${path.join(dir, "rootless-k8s")}`,
  );
}
