// Kernel identity: the release string, its numeric version, and WSL from /proc/version.

/** [major, minor, patch] of a release like "6.1.0-18-amd64" or "3.10.0-1160.el7.x86_64". */
export function kernelVersion(release: string): [number, number, number] | null {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(release.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

/** True if version a >= b, comparing component by component. */
export function versionAtLeast(a: readonly number[] | null, b: readonly number[]): boolean {
  if (!a) return false;
  for (let i = 0; i < b.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

/**
 * WSL 1 kernels say "-Microsoft" (capital M, e.g. 4.4.0-18362-Microsoft); WSL 2 kernels say
 * "-microsoft-standard" (optionally "-WSL2"). Anything else is not WSL.
 */
export function wslVersion(procVersion: string | null, release = ""): 0 | 1 | 2 {
  const text = `${procVersion ?? ""} ${release}`;
  if (/microsoft-standard|-WSL2/i.test(text) || /-microsoft\b/.test(text)) return 2;
  if (/Microsoft/.test(text)) return 1;
  return 0;
}

/** A RHEL/CentOS 7 kernel: 3.10.0-xxx.el7. */
export function isEl7Kernel(release: string): boolean {
  return /^3\.10\.0-.*\.el7/.test(release);
}
