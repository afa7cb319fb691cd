// `rootless-k8s logs`: placeholder until its issue lands; it refuses plainly instead of pretending.
import type { CommandSpec } from "../args";
import { ExitCode, UserError } from "../errors";
import type { Context } from "./registry";

export const spec: CommandSpec = {
  name: "logs",
  summary: "(not available in this build yet)",
  usage: "rootless-k8s logs",
  options: {},
};

export async function run(_ctx: Context): Promise<number> {
  throw new UserError("`logs` is not available in this build yet", { exitCode: ExitCode.Refused });
}
