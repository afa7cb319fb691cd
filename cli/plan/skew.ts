// Version skew of an upgrade (kubernetes.io/releases/version-skew-policy): one minor at a time, no
// downgrade, and the kubelet never newer than the API server. etcd never goes back a minor (its
// data format only moves forward). Pure: two version maps in, the reason for a refusal out.

export interface Semver {
  major: number;
  minor: number;
  patch: number;
}

export function parseVersion(v: string): Semver | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v);
  return m ? { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) } : null;
}

function cmp(a: Semver, b: Semver): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

const show = (v: Semver) => `${v.major}.${v.minor}`;

/** Null when `from` → `to` is a supported upgrade, else why not (one line, for the user). */
export function skewProblem(from: Record<string, string>, to: Record<string, string>): string | null {
  const a = parseVersion(from.kubernetes ?? "");
  const b = parseVersion(to.kubernetes ?? "");
  if (!a || !b) return `cannot compare Kubernetes versions "${from.kubernetes ?? "?"}" and "${to.kubernetes ?? "?"}"`;
  if (a.major !== b.major) return `Kubernetes ${from.kubernetes} → ${to.kubernetes} changes the major version`;
  if (cmp(b, a) < 0) return `Kubernetes ${from.kubernetes} → ${to.kubernetes} is a downgrade, which Kubernetes does not support`;
  if (b.minor - a.minor > 1) {
    return `Kubernetes ${from.kubernetes} → ${to.kubernetes} skips ${b.minor - a.minor - 1} minor version${b.minor - a.minor > 2 ? "s" : ""}: upgrade one minor at a time (${show(a)} → ${a.major}.${a.minor + 1} first)`;
  }
  // A set may pin the kubelet and the API server apart; the kubelet must never be the newer one.
  const kubelet = parseVersion(to.kubelet ?? to.kubernetes ?? "");
  const apiserver = parseVersion(to["kube-apiserver"] ?? to.kubernetes ?? "");
  if (kubelet && apiserver && cmp(kubelet, apiserver) > 0)
    return `the kubelet (${to.kubelet ?? to.kubernetes}) would be newer than the API server (${to["kube-apiserver"] ?? to.kubernetes})`;
  const ea = parseVersion(from.etcd ?? "");
  const eb = parseVersion(to.etcd ?? "");
  if (ea && eb && (eb.major < ea.major || (eb.major === ea.major && eb.minor < ea.minor)))
    return `etcd ${from.etcd} → ${to.etcd} goes back a minor version; etcd's data does not`;
  return null;
}
