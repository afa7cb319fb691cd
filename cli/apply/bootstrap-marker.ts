// The marker beside etcd's data that says at which Kubernetes version, and for which etcd data, this
// node passed the API server's whole /readyz (its bootstrap hooks included), so later starts wait
// for /readyz without the two hooks that poll once a second (the rule: cli/readiness/bootstrap.ts).
// Written here, once install, upgrade or start has seen the whole /readyz ok, the API server and the
// kubelet at the plan's version, and the node Ready.
import * as path from "node:path";
import { writeFileAtomic } from "./files";
import type { Plan } from "../plan/plan";
import { layout } from "../render/layout";
import { bootstrapMarkerText, bootstrapRecordNow, bootstrappedAt, readyzPath } from "../readiness/bootstrap";

export interface BootstrapReadiness {
  /** The /readyz this start waits for. */
  readyz: string;
  /** After Ready: records the bootstrap at the plan's version, when this start waited for the whole /readyz. */
  record: () => Promise<void>;
}

export async function bootstrapReadiness(plan: Plan): Promise<BootstrapReadiness> {
  const version = plan.versions.components.kubernetes;
  const l = layout(plan);
  const marker = l.data.bootstrapMarker;
  const warm = plan.role !== "worker" && version !== undefined && (await bootstrappedAt(marker, version));
  return {
    readyz: readyzPath(warm),
    record: async () => {
      if (warm || plan.role === "worker" || version === undefined) return;
      const now = await bootstrapRecordNow(version, path.join(l.data.etcd, "member"));
      if (now) await writeFileAtomic(marker, bootstrapMarkerText(now));
    },
  };
}
