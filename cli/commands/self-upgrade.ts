// `rootless-k8s self-upgrade`: placeholder until its issue lands; it refuses plainly instead of pretending.
import type { CommandSpec } from "../args";
import { ExitCode, UserError } from "../errors";
import type { Context } from "./registry";

export const spec: CommandSpec = {
  name: "self-upgrade",
  summary: "(not available in this build yet)",
  usage: "rootless-k8s self-upgrade",
  options: {},
};

export async function run(_ctx: Context): Promise<number> {
  throw new UserError("`self-upgrade` is not available in this build yet", { exitCode: ExitCode.Refused });
}
