// The node's services as `rootless-k8s up` reads them: the target's file (its members in start
// order, its timers) and one file per service, in the folder the plan names (cli/render/units.ts
// writes them). Read at start and again at each reload (what a daemon-reload is under systemd).
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { UserError } from "../errors";
import { serviceSpecFile, type NodeService, type NodeTarget } from "../render/services";

export interface NodeSpec {
  target: NodeTarget;
  services: Map<string, NodeService>;
}

async function readJson<T>(file: string): Promise<T> {
  const text = await fsp.readFile(file, "utf8").catch((e: NodeJS.ErrnoException) => {
    throw new UserError(`cannot read ${file}: ${e.code ?? e.message}`, {
      fix: "re-run `rootless-k8s install` to write the node's services again",
    });
  });
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new UserError(`${file} is not the JSON rootless-k8s wrote`, { fix: "re-run `rootless-k8s install` to write it again" });
  }
}

export async function loadSpec(dir: string, targetName: string): Promise<NodeSpec> {
  const target = await readJson<NodeTarget>(path.join(dir, serviceSpecFile(targetName)));
  if (target.schema !== 1 || !Array.isArray(target.members))
    throw new UserError(`${path.join(dir, serviceSpecFile(targetName))} is from another rootless-k8s`, {
      fix: "re-run `rootless-k8s install` with this rootless-k8s",
    });
  const services = new Map<string, NodeService>();
  for (const m of target.members) services.set(m, await readJson<NodeService>(path.join(dir, serviceSpecFile(m))));
  return { target, services };
}
