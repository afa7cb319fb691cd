// --merge-kubeconfig: the admin context added to ~/.kube/config (never replacing an entry of the
// user's), recorded in the receipt first so that uninstall takes out exactly what was added.
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { UserError, messageOf } from "../errors";
import type { Plan } from "../plan/plan";
import { adminKubeconfig } from "../render/kubeconfig";
import { mergeKubeconfig, type Pki } from "../render/index";
import { ensureDir, writeFileAtomic } from "./files";
import type { Receipt } from "./receipt";

export async function mergeAdminContext(
  plan: Plan,
  pki: Pki,
  receipt: Receipt,
  record: (r: Receipt) => Promise<void>,
): Promise<string | null> {
  const file = plan.paths.userKubeconfig;
  const existing = await fsp.readFile(file, "utf8").catch(() => null);
  let result;
  try {
    result = mergeKubeconfig(existing, adminKubeconfig(plan, pki));
  } catch (e) {
    throw new UserError(`cannot merge into ${file}: ${messageOf(e)}`, {
      fix: `use the node's own kubeconfig (${plan.paths.adminKubeconfig}), or re-run with --no-merge-kubeconfig`,
    });
  }
  if (result.content !== null) {
    await record({ ...receipt, kubeconfigMerge: { file, ...result.names } });
    const dir = path.dirname(file);
    if (!(await fsp.stat(dir).catch(() => null))) await ensureDir(dir, 0o700);
    await writeFileAtomic(file, result.content, { mode: 0o600 });
  } else if (!receipt.kubeconfigMerge) await record({ ...receipt, kubeconfigMerge: { file, ...result.names } });
  return result.names.context;
}
