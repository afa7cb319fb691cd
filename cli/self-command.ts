// The command that runs this rootless-k8s again: the binary itself (a release: whatever binary is
// at that path then runs, self-upgrade included), or, from a source checkout, node with its loader
// flags and the script. For the units that run it (ports, overlay, approver) and for `up --detach`.
import { realpathSync } from "node:fs";
import { isSea } from "node:sea";

export function selfCommand(): string[] {
  if (isSea()) return [realpathSync(process.execPath)];
  const script = process.argv[1];
  return [process.execPath, ...process.execArgv, ...(script ? [realpathSync(script)] : [])];
}
