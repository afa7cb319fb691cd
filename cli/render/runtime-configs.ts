// Container runtime configs: containerd (config version 3 for 2.x, version 2 for 1.x, with the
// keys of containerd's docs/cri/config.md), CRI-O's crio.conf (cgroupfs, conmon in the pod's
// cgroup, an infra container for every pod in mode none), and the CNI bridge that serves the
// single node.
import * as path from "node:path";
import { stringify as toml } from "smol-toml";
import type { Plan } from "../plan/plan";
import { atLeast } from "../plan/rules";
import { layout } from "./layout";

const HEADER = "# Written by rootless-k8s from the node plan; rewritten on every install.\n";

/** Settings of the CRI plugin that are the same in both config versions. */
function rootlessCri() {
  return {
    // The user namespace may not load AppArmor profiles or lower OOM scores.
    disable_apparmor: true,
    restrict_oom_score_adj: true,
    disable_hugetlb_controller: true,
  };
}

function runcRuntime(plan: Plan) {
  const oci = plan.runtime.ociRuntime;
  return {
    runtime_type: "io.containerd.runc.v2",
    // The cgroupfs driver, as the kubelet uses (KEP-4033: both must agree). A runtime that needs a
    // global flag (crun --cgroup-manager=disabled) is run through its rendered wrapper.
    // NoNewKeyring: runc/crun create --no-new-keyring, so containers do not each take a key of the
    // user's kernel.keys.maxkeys (plan.runtime.keyringPerContainer, issue 45).
    options: {
      BinaryName: oci?.cgroupManager ? layout(plan).scripts.ociRuntime : (oci?.path ?? "runc"),
      SystemdCgroup: false,
      ...(plan.runtime.keyringPerContainer ? {} : { NoNewKeyring: true }),
    },
  };
}

export function containerdConfig(plan: Plan): Record<string, unknown> {
  const l = layout(plan);
  const rt = plan.runtime;
  const snapshotter = rt.snapshotter?.name ?? "overlayfs";
  const cni = { bin_dir: l.cniBinDir, conf_dir: l.cniConfDir };
  const base = {
    root: l.data.containerd,
    state: l.run.containerd,
    grpc: { address: rt.criSocket },
  };
  if (rt.containerdConfigVersion === 2) {
    return {
      version: 2,
      ...base,
      plugins: {
        "io.containerd.grpc.v1.cri": {
          // containerd 1.x: no cgroup writes in mode none; cgroups of the delegated subtree otherwise.
          disable_cgroup: plan.runtime.disableCgroup,
          ...rootlessCri(),
          containerd: { snapshotter, default_runtime_name: "runc", runtimes: { runc: runcRuntime(plan) } },
          cni,
        },
      },
    };
  }
  // containerd 2.1 deprecated `cni.bin_dir` for the list `bin_dirs` (removed in 2.4; its
  // RELEASES.md), and reports the old key as a deprecation warning in the CRI status.
  const cni3 = atLeast(rt.version, "2.1.0") ? { bin_dirs: [l.cniBinDir], conf_dir: l.cniConfDir } : cni;
  return {
    version: 3,
    ...base,
    plugins: {
      "io.containerd.cri.v1.images": { snapshotter },
      "io.containerd.cri.v1.runtime": {
        ...rootlessCri(),
        containerd: { default_runtime_name: "runc", runtimes: { runc: runcRuntime(plan) } },
        cni: cni3,
      },
    },
  };
}

export function crioConfig(plan: Plan): Record<string, unknown> {
  const l = layout(plan);
  const bin = (n: string) => path.join(plan.paths.binDir, n);
  const snap = plan.runtime.snapshotter;
  const storage =
    snap?.name === "native"
      ? { storage_driver: "vfs" }
      : { storage_driver: "overlay", ...(snap?.fuseOverlayfs ? { storage_option: [`overlay.mount_program=${snap.fuseOverlayfs}`] } : {}) };
  const oci = plan.runtime.ociRuntime ?? { name: "crun", path: bin("crun") };
  return {
    crio: {
      root: path.join(l.data.crio, "storage"),
      runroot: path.join(l.run.crio, "storage"),
      ...storage,
      version_file: path.join(l.run.crio, "version"),
      version_file_persist: path.join(l.data.crio, "version"),
      clean_shutdown_file: path.join(l.data.crio, "clean.shutdown"),
      api: { listen: plan.runtime.criSocket },
      runtime: {
        cgroup_manager: "cgroupfs",
        conmon: bin("conmon"),
        // conmon joins the pod's cgroup: no system.slice for cgroupfs (cri-o/cri-o#3856).
        conmon_cgroup: "pod",
        // Mode none: every pod gets its infra (pause) container under conmon. CRI-O's default drops
        // it, and then makes the pod's cgroup itself (CreateSandboxCgroup: mkdir in every v1
        // controller, cpuset first), which fails without cgroup write access ("mkdir
        // /sys/fs/cgroup/cpuset/crio-<id>: permission denied", seen on the e2e's host route). With
        // an infra container CRI-O writes no cgroup of its own: conmon's move gets no limits, and
        // the OCI runtime, rootless, goes on without the cgroups it may not create.
        ...(plan.runtime.disableCgroup ? { drop_infra_ctr: false } : {}),
        default_runtime: oci.name,
        pinns_path: bin("pinns"),
        namespaces_dir: path.join(l.run.crio, "ns"),
        container_exits_dir: path.join(l.run.crio, "exits"),
        container_attach_socket_dir: l.run.crio,
        runtimes: { [oci.name]: { runtime_path: oci.path, runtime_type: "oci", runtime_root: path.join(l.run.crio, oci.name) } },
      },
      image: { signature_policy: l.crioPolicy },
      network: { network_dir: l.cniConfDir, plugin_dirs: [l.cniBinDir] },
    },
  };
}

/** containers-policy.json(5): accept images as the registries serve them (no signature policy). */
export function crioPolicy(): Record<string, unknown> {
  return { default: [{ type: "insecureAcceptAnything" }] };
}

export function renderToml(doc: Record<string, unknown>): string {
  return HEADER + toml(doc);
}

/** A bridge with host-local IPAM over the pod network, plus portmap for hostPorts. */
export function cniConflist(plan: Plan): Record<string, unknown> {
  return {
    cniVersion: "1.0.0",
    name: "rootless-k8s",
    plugins: [
      {
        type: "bridge",
        bridge: "cni0",
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          // The node's own /24 (spec.podCIDR); a plan older than node ranges: the whole pod network.
          ranges: [[{ subnet: plan.cidrs.node ?? plan.cidrs.pods }]],
          routes: [{ dst: "0.0.0.0/0" }],
          dataDir: path.join(layout(plan).data.cni, "networks"),
        },
      },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
  };
}
