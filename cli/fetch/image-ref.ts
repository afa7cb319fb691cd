// Image references as the container runtimes name them: the grammar of distribution's reference
// package and its normalization (ParseDockerRef): "busybox" → "docker.io/library/busybox:latest".
// containerd stores the names it reads from an OCI archive as they are, and the kubelet's lookups
// are normalized first, so only a normalized name can be found by a pod's `image:`.

const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const DOMAIN = new RegExp(`^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?$`);
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;
const NAME_MAX = 255;

export interface ImageRef {
  domain: string;
  path: string;
  tag: string | null;
  digest: string | null;
}

/** Parses a reference the way distribution's ParseNormalizedNamed does; null when it is not one. */
export function parseImageRef(ref: string): ImageRef | null {
  let rest = ref;
  let digest: string | null = null;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return null;
  }
  let tag: string | null = null;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return null;
  }
  if (rest === "" || rest.length > NAME_MAX) return null;
  const slash = rest.indexOf("/");
  let domain: string;
  let path: string;
  const first = slash < 0 ? "" : rest.slice(0, slash);
  if (slash < 0 || (!first.includes(".") && !first.includes(":") && first !== "localhost" && first.toLowerCase() === first)) {
    domain = "docker.io";
    path = rest;
  } else {
    domain = first;
    path = rest.slice(slash + 1);
    if (!DOMAIN.test(domain)) return null;
  }
  if (domain === "index.docker.io") domain = "docker.io";
  if (domain === "docker.io" && !path.includes("/")) path = `library/${path}`;
  if (!path.split("/").every((c) => PATH_COMPONENT.test(c))) return null;
  return { domain, path, tag, digest };
}

/**
 * The normalized form (ParseDockerRef): full domain and path, ":latest" when neither a tag nor a
 * digest is given, and only the digest when both are. Null when `ref` is not a reference.
 */
export function normalizeImageRef(ref: string): string | null {
  const r = parseImageRef(ref);
  if (!r) return null;
  const name = `${r.domain}/${r.path}`;
  if (r.digest) return `${name}@${r.digest}`;
  return `${name}:${r.tag ?? "latest"}`;
}
