// --mirror URL / ROOTLESS_K8S_MIRROR: replace the upstream origin of every download while keeping
// its path, so one corporate mirror (or a loopback test server) serves dl.k8s.io, github.com and
// storage.googleapis.com files at their upstream paths. Checksums are still the pinned ones.
import { ExitCode, UserError } from "../errors";

export const MIRROR_ENV = "ROOTLESS_K8S_MIRROR";

/** The mirror to use: the flag wins over the environment. Validated; null when none. */
export function mirrorFrom(flag: string | undefined, env: NodeJS.ProcessEnv): string | null {
  const raw = flag ?? env[MIRROR_ENV];
  if (raw === undefined || raw === "") return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badMirror(raw, flag !== undefined);
  }
  if ((u.protocol !== "https:" && u.protocol !== "http:") || u.search || u.hash || u.username || u.password) {
    throw badMirror(raw, flag !== undefined);
  }
  return u.origin + u.pathname.replace(/\/+$/, "");
}

/** https://dl.k8s.io/v1.36.0/x.tar.gz + https://mirror.corp/k8s → https://mirror.corp/k8s/v1.36.0/x.tar.gz */
export function applyMirror(url: string, mirror: string | null | undefined): string {
  if (!mirror) return url;
  const u = new URL(url);
  return mirror + u.pathname + u.search;
}

function badMirror(raw: string, fromFlag: boolean): UserError {
  const where = fromFlag ? "--mirror" : MIRROR_ENV;
  return new UserError(`${where} must be an http:// or https:// URL with no query, fragment or credentials (got "${raw}")`, {
    exitCode: ExitCode.Usage,
    fix: `e.g. ${where === "--mirror" ? "--mirror " : `${MIRROR_ENV}=`}https://mirror.example.com/k8s`,
  });
}
