// `rootless-k8s components`: placeholder until its issue lands; it refuses plainly instead of pretending.
import type { CommandSpec } from "../args";
import { ExitCode, UserError } from "../errors";
import type { Context } from "./registry";

export const spec: CommandSpec = {
  name: "components",
  summary: "(not available in this build yet)",
  usage: "rootless-k8s components",
  options: {},
};

export async function run(_ctx: Context): Promise<number> {
  throw new UserError("`components` is not available in this build yet", { exitCode: ExitCode.Refused });
}
