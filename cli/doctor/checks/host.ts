// The machine itself: Linux, a supported architecture, the distribution, the kernel (and WSL).
import { ok, fail, warn, type Check } from "../check";
import { versionAtLeast } from "../../host/parse/kernel";

export const hostChecks: Check[] = [
  {
    id: "os",
    group: "host",
    label: "operating system",
    blocks: true,
    run: (f) => (f.kernel.sysname === "Linux" ? ok("Linux") : fail(`${f.kernel.sysname}: a rootless Kubernetes node needs Linux`)),
  },
  {
    id: "arch",
    group: "host",
    label: "architecture",
    blocks: true,
    run: (f) =>
      f.arch === "amd64" || f.arch === "arm64"
        ? ok(f.arch)
        : fail(`${f.arch}: the node's components are published for amd64 and arm64 only`),
  },
  {
    id: "distro",
    group: "host",
    label: "distribution",
    run: (f) => {
      const name = f.distro.prettyName ?? f.distro.id;
      if (f.distro.source === null) return warn("no /etc/os-release or /usr/lib/os-release: package commands in fixes are generic");
      if (f.distro.family === "other") return warn(`${name}: unknown package family, so package commands in fixes are generic`);
      return ok(`${name} (${f.distro.family} family)`);
    },
  },
  {
    id: "kernel",
    group: "host",
    label: "kernel",
    blocks: true,
    run: (f) => {
      const k = f.kernel;
      if (k.wsl === 1) {
        return fail(`WSL 1 (${k.release}) has no Linux kernel: no namespaces, no cgroups`, {
          user: ["# in Windows PowerShell: wsl.exe --set-version <distribution> 2"],
        });
      }
      const wsl = k.wsl === 2 ? " (WSL 2)" : "";
      if (!versionAtLeast(k.version, [4, 18])) {
        return warn(
          `${k.release}${wsl} is older than 4.18: fuse-overlayfs and rootless overlayfs will not work, the node falls back to slow copies`,
        );
      }
      return ok(`${k.release}${wsl}`);
    },
  },
];
