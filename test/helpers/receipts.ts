// A schema-1 receipt of an installed node (mode none, containerd), as tests write them by hand: the
// fields every such test shares, with `fields` over them.
import type { KubeconfigMerge } from "../../cli/apply/receipt";

export function testReceipt<T extends Record<string, unknown>>(fields: T) {
  return {
    schemaVersion: 1 as const,
    tool: "0.0.0",
    state: "installed" as const,
    mode: "none" as const,
    runtime: "containerd" as const,
    target: "rootless-k8s.target",
    units: [] as string[],
    files: [] as unknown[],
    sets: {},
    current: null,
    previous: null,
    createdDirs: [],
    kubeconfigMerge: null as KubeconfigMerge | null,
    plan: null as unknown,
    updatedAt: "",
    ...fields,
  };
}
