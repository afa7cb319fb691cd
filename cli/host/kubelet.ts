// What the kubelet binary in use can do, read from its own --help through the Host: whether
// `--cgroup-driver` accepts "none" (only a patched kubelet, such as Usernetes' 2019-2021 builds:
// upstream never merged it) and whether it needs the SupportNoneCgroupDriver gate for that.
// Detect it, never assume: the plan uses `none` only when this probe says so.
import type { KubeletCapabilities } from "./facts";
import type { Host } from "./host";
import { upstreamVersion } from "./parse/versions";

const PROBE_TIMEOUT_MS = 10_000;

/** The help text of one flag: its line and the indented lines that continue it. */
export function flagHelp(help: string, flag: string): string | null {
  const lines = help.split("\n");
  const start = lines.findIndex((l) => new RegExp(`^\\s*(-\\w, )?--${flag}\\b`).test(l));
  if (start < 0) return null;
  const out = [lines[start]!];
  for (const l of lines.slice(start + 1)) {
    if (/^\s*(-\w, )?--[a-z]/.test(l) || l.trim() === "") break;
    out.push(l);
  }
  return out.join(" ");
}

export function parseKubeletHelp(help: string): Pick<KubeletCapabilities, "cgroupDriverNone" | "supportNoneCgroupDriverGate"> {
  const driver = flagHelp(help, "cgroup-driver") ?? "";
  const gates = flagHelp(help, "feature-gates") ?? "";
  return {
    cgroupDriverNone: /Possible values:[^)]*'none'/.test(driver),
    supportNoneCgroupDriverGate: /\bSupportNoneCgroupDriver=true\|false\b/.test(gates),
  };
}

/** "Kubernetes v1.36.0" → "1.36.0". */
export function parseKubeletVersion(text: string): string | null {
  const m = /Kubernetes v?(\d+\.\d+\.\d+\S*)/.exec(text);
  return m ? upstreamVersion(m[1]) : null;
}

/** Probes the kubelet at `path`; null when it is not there (not installed yet) or does not run. */
export async function probeKubelet(host: Host, path: string): Promise<KubeletCapabilities | null> {
  const [version, help] = await Promise.all([
    host.run(path, ["--version"], { timeoutMs: PROBE_TIMEOUT_MS }),
    host.run(path, ["--help"], { timeoutMs: PROBE_TIMEOUT_MS }),
  ]);
  if (help.notFound || help.timedOut || !/--cgroup-driver/.test(help.stdout + help.stderr)) return null;
  return { path, version: parseKubeletVersion(version.stdout), ...parseKubeletHelp(help.stdout + help.stderr) };
}
