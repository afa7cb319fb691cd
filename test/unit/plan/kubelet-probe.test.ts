// The kubelet probe reads the binary's own --help through a Host. The help lines below are the
// real ones: stock from kubernetes/kubernetes cmd/kubelet/app/options/options.go ("Driver that the
// kubelet uses to manipulate cgroups on the host.  Possible values: 'cgroupfs', 'systemd'"), and the
// patched one from rootless-containers/usernetes@v20190603.0
// src/patches/kubernetes/0003-kubelet-new-feature-gate-SupportNoneCgroupDriver.patch, which adds
// 'none' there and the SupportNoneCgroupDriver=true|false (ALPHA - default=false) gate.
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { localHost } from "../../../cli/host/host";
import { flagHelp, parseKubeletHelp, parseKubeletVersion, probeKubelet } from "../../../cli/host/kubelet";
import { tempDir } from "../../helpers/temp";

const STOCK = `Usage:
  kubelet [flags]

Flags:
      --cgroup-driver string                                     Driver that the kubelet uses to manipulate cgroups on the host.  Possible values: 'cgroupfs', 'systemd' (default "cgroupfs") (DEPRECATED: This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.)
      --cgroup-root string                                       Optional root cgroup to use for pods. This is handled by the container runtime on a best effort basis. Default: '', which means use the container runtime default.
      --feature-gates mapStringBool                              A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:
                                                                 APIResponseCompression=true|false (BETA - default=true)
                                                                 KubeletInUserNamespace=true|false (ALPHA - default=false)
`;

const PATCHED = `Flags:
      --cgroup-driver string                                                                                      Driver that the kubelet uses to manipulate cgroups on the host.  Possible values: 'cgroupfs', 'systemd', 'none' (default "cgroupfs")
      --feature-gates mapStringBool                                                                               A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:
                                                                                                                  SupportNoneCgroupDriver=true|false (ALPHA - default=false)
                                                                                                                  SupportPodPidsLimit=true|false (BETA - default=true)
`;

describe("kubelet help parsing", () => {
  it("finds a flag's help with its continuation lines", () => {
    expect(flagHelp(STOCK, "feature-gates")).toContain("KubeletInUserNamespace=true|false");
    expect(flagHelp(STOCK, "cgroup-driver")).not.toContain("cgroup-root");
    expect(flagHelp(STOCK, "no-such-flag")).toBeNull();
  });

  it("a stock kubelet has no none driver; a patched one has it and its gate", () => {
    expect(parseKubeletHelp(STOCK)).toEqual({ cgroupDriverNone: false, supportNoneCgroupDriverGate: false });
    expect(parseKubeletHelp(PATCHED)).toEqual({ cgroupDriverNone: true, supportNoneCgroupDriverGate: true });
  });

  it("reads the version line", () => {
    expect(parseKubeletVersion("Kubernetes v1.36.0\n")).toBe("1.36.0");
    expect(parseKubeletVersion("Kubernetes v1.15.0-beta.1.3+a9d3c0b3e0ad0c\n")).toBe("1.15.0-beta.1.3");
    expect(parseKubeletVersion("nonsense")).toBeNull();
  });
});

describe("probeKubelet runs the binary through the Host", () => {
  const dir = tempDir("rk8s-kubelet-");

  /** A stand-in executable that prints a recorded --help, as the real binary would. */
  function fakeKubelet(name: string, help: string, version: string): string {
    const file = join(dir, name);
    writeFileSync(join(dir, `${name}.help`), help);
    writeFileSync(file, `#!/bin/sh\ncase "$1" in --version) echo "${version}";; --help) cat "${file}.help";; *) exit 2;; esac\n`);
    chmodSync(file, 0o755);
    return file;
  }

  it("detects the patched kubelet and the stock one", async () => {
    const host = localHost();
    expect(await probeKubelet(host, fakeKubelet("patched", PATCHED, "Kubernetes v1.15.0"))).toEqual({
      path: join(dir, "patched"),
      version: "1.15.0",
      cgroupDriverNone: true,
      supportNoneCgroupDriverGate: true,
    });
    expect(await probeKubelet(host, fakeKubelet("stock", STOCK, "Kubernetes v1.36.0"))).toMatchObject({
      version: "1.36.0",
      cgroupDriverNone: false,
    });
  });

  it("says null (not assumed) when the kubelet is not installed or is not a kubelet", async () => {
    const host = localHost();
    expect(await probeKubelet(host, join(dir, "missing"))).toBeNull();
    expect(await probeKubelet(host, "/bin/true")).toBeNull();
  });
});
