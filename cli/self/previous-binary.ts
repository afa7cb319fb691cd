// The binary that `self-upgrade` replaced is kept beside the new one as `<binary>.previous`, so a
// new binary that cannot even start can be put back by hand (mv rootless-k8s.previous rootless-k8s).
// Once the new binary has run, that copy has served its purpose: the first run removes it.
import { unlinkSync } from "node:fs";
import { isSea } from "node:sea";

export function previousPathOf(binary: string): string {
  return `${binary}.previous`;
}

/** Called at every start of the single binary: removes `<this binary>.previous` if there is one. */
export function dropPreviousBinary(execPath: string = process.execPath): void {
  if (!isSea()) return; // running from source or the bundle under node: there is no binary of ours
  try {
    unlinkSync(previousPathOf(execPath));
  } catch {
    // none there (the usual case), or a folder we cannot write: nothing to do
  }
}
