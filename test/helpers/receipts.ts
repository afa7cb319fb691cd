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

/**
 * The part of an installed node's plan that uninstall reads from a hand-written receipt: the
 * runtime, the unit names, and the paths (`paths` over the defaults below `home`).
 */
export function testUninstallPlan(paths: { home: string; unitDir: string; logDir: string; prefix?: string | null; cacheDir?: string }) {
  return {
    runtime: { name: "containerd" },
    units: {
      target: "rootless-k8s.target",
      owner: "rootless-k8s-rootlesskit.service",
      etcd: "e.service",
      apiServer: "a.service",
      controllerManager: "c.service",
      scheduler: "s.service",
      kubelet: "k.service",
      kubeProxy: "p.service",
      criDockerd: null,
    },
    paths: {
      home: paths.home,
      prefix: paths.prefix ?? null,
      unitDir: paths.unitDir,
      cacheDir: paths.cacheDir ?? `${paths.home}/.cache/rootless-k8s`,
      logDir: paths.logDir,
    } as Record<string, string | null>,
  };
}
