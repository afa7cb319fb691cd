// Image layers from Debian 12's binary packages, for the test images upstream builds FROM a Debian
// or Alpine base (glibc-dns-testing: debian:bookworm-slim + dnsutils; nginx): the packages and
// every package they depend on (apt-cache depends --recurse, Depends and Pre-Depends only), taken
// with `apt-get download` (apt checks each against the archive's signed index) into a cache outside
// the repository, unpacked with `dpkg-deb -x` (no maintainer scripts run), and read back as tar
// entries for test/e2e/lib/oci-image.mjs.
import { execFileSync, spawnSync } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The packages and their Depends/Pre-Depends closure (virtual packages dropped). */
export function closure(packages) {
  const out = execFileSync(
    "apt-cache",
    [
      "depends",
      "--recurse",
      "--no-recommends",
      "--no-suggests",
      "--no-conflicts",
      "--no-breaks",
      "--no-replaces",
      "--no-enhances",
      ...packages,
    ],
    { encoding: "utf8", maxBuffer: 64 << 20 },
  );
  return [...new Set(out.split("\n").filter((l) => l && !l.startsWith(" ") && !l.startsWith("<")))].sort();
}

/** `apt-get download` of every package into `cache` (once: a warm cache downloads nothing). */
export function download(packages, cache) {
  mkdirSync(cache, { recursive: true });
  const have = new Set(readdirSync(cache).map((f) => f.split("_")[0]));
  const missing = packages.filter((p) => !have.has(p));
  if (!missing.length) return;
  const get = () => spawnSync("apt-get", ["download", ...missing], { cwd: cache, encoding: "utf8" });
  let r = get();
  if (r.status !== 0) {
    spawnSync("apt-get", ["update"], { stdio: "ignore" });
    r = get();
  }
  if (r.status !== 0) throw new Error(`apt-get download ${missing.join(" ")} failed: ${r.stderr.trim().slice(-500)}`);
}

/** Every entry below `root`, as tar entries (files with their modes, folders, symlinks). */
function entriesOf(root) {
  const list = [];
  const walk = (rel) => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const path = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(root, path));
      const mode = st.mode & 0o7777;
      if (st.isSymbolicLink()) list.push({ path, type: "symlink", linkpath: readlinkSync(join(root, path)) });
      else if (st.isDirectory()) {
        list.push({ path, type: "dir", mode });
        walk(path);
      } else if (st.isFile()) list.push({ path, content: readFileSync(join(root, path)), mode });
    }
  };
  walk("");
  return list;
}

const unpacked = new Map();

/**
 * The unpacked packages as tar entries, and the exact package versions (for the image's source).
 * `cache`: the folder the .deb files are kept in. Unpacked once per process: the agnhost layer
 * serves the agnhost, AgnhostPrev, kitten and nautilus images (the entries are never mutated).
 */
export function debianEntries(packages, cache) {
  const key = `${cache}\0${packages.join(" ")}`;
  if (!unpacked.has(key)) unpacked.set(key, unpack(packages, cache));
  return unpacked.get(key);
}

function unpack(packages, cache) {
  const all = closure(packages);
  download(all, cache);
  // One file per package: the newest one the cache holds (a point release adds a second).
  const newest = new Map();
  for (const f of readdirSync(cache).sort()) if (f.endsWith(".deb") && all.includes(f.split("_")[0])) newest.set(f.split("_")[0], f);
  const files = [...newest.values()];
  const root = mkdtempSync(join(tmpdir(), "rk8s-debroot-"));
  try {
    for (const f of files) execFileSync("dpkg-deb", ["-x", join(cache, f), root]);
    const versions = files.map((f) =>
      f
        .replace(/_[^_]+\.deb$/, "")
        .replace("_", "=")
        .replace(/%3a/g, ":"),
    );
    return { entries: entriesOf(root), versions };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Entries merged by path, the later list winning (a package's /etc/passwd over busybox's). */
export function mergeEntries(...lists) {
  const byPath = new Map();
  for (const l of lists) for (const e of l) byPath.set(e.path.replace(/\/$/, ""), e);
  return [...byPath.values()];
}
