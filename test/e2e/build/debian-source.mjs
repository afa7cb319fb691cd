// Builds the e2e's C components that no Go module serves, from a Debian source package of the
// suite the test manifest names (test/e2e/build/components.json, debianSources). Test tooling,
// never part of the product.
//
// Trust chain, as apt's: the suite's InRelease must carry a good signature from Debian's archive
// keyring (gpgv); it gives the sha256 of main/source/Sources.xz; that gives the sha256 of the
// package's upstream tarball (.orig.tar.gz, .xz or .bz2), which is then built with ./configure (when the
// entry names its options; a Kconfig tree: make defconfig and the entry's "kconfig" settings) and make on this machine (Debian 12: the -dev packages are in
// scripts/test-deps.sh --e2e). Debian's own patches are not applied.
//
// Cached in DIR/<id>/<version>-<recipe hash>/ with build.json; a warm run builds nothing.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { firstVersionLine, loadManifest, sha256 as fileSha256, withLock } from "./build-components.mjs";

const MIRROR = "http://deb.debian.org/debian";
const KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg";

const sha256 = (b) => createHash("sha256").update(b).digest("hex");
const get = (url) => execFileSync("curl", ["-fsSL", "--retry", "3", "-m", "300", url], { maxBuffer: 256 << 20 });

/** The sha256 a signed index lists for `name` (a "Checksums-Sha256"/"SHA256" line: hex size name). */
function listedSha256(text, name) {
  const line = text.split("\n").find((l) => l.trim().endsWith(` ${name}`) && /^\s*[0-9a-f]{64}\s/.test(l));
  if (!line) throw new Error(`no sha256 for ${name}`);
  return line.trim().split(/\s+/)[0];
}

function verified(url, want) {
  const data = get(url);
  const got = sha256(data);
  if (got !== want) throw new Error(`${url}: sha256 ${got}, the signed index says ${want}`);
  return data;
}

/** The version as it goes into a path: a Debian epoch's ":" never does (make takes it for a rule). */
const pathVersion = (s) => s.version.replaceAll(":", "_");

/** One build of an entry at a time (build-components' lock); a cached build counts only if its binaries are intact. */
function buildOne(s, { cache, say }) {
  const recipe = sha256(JSON.stringify(s)).slice(0, 8);
  const out = join(cache, s.id, `${pathVersion(s)}-${recipe}`);
  return withLock(out, say, () => buildOneLocked(s, out, { cache, say }));
}

function buildOneLocked(s, out, { cache, say }) {
  const meta = join(out, "build.json");
  if (existsSync(meta)) {
    const j = JSON.parse(readFileSync(meta, "utf8"));
    if (j.binaries.every((x) => existsSync(x.path) && fileSha256(x.path) === x.sha256)) return { ...j, cached: true };
  }
  const t0 = Date.now();
  const work = join(cache, "work", `${s.id}-${pathVersion(s)}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  say(`build ${s.id}: Debian ${s.suite} source ${s.package} ${s.version}`);
  // 1. InRelease, signed by Debian's archive key.
  const inRelease = join(work, "InRelease");
  writeFileSync(inRelease, get(`${MIRROR}/dists/${s.suite}/InRelease`));
  const signed = execFileSync("gpgv", ["--keyring", KEYRING, "--output", "-", inRelease], { stdio: ["ignore", "pipe", "pipe"] }).toString();
  // 2. Sources.xz by the sha256 InRelease gives; the package's stanza at the named version.
  const sourcesXz = verified(`${MIRROR}/dists/${s.suite}/main/source/Sources.xz`, listedSha256(signed, "main/source/Sources.xz"));
  const sources = execFileSync("xz", ["-dc"], { input: sourcesXz, maxBuffer: 512 << 20 }).toString();
  const stanza = sources.split("\n\n").find((x) => x.startsWith(`Package: ${s.package}\n`) && x.includes(`\nVersion: ${s.version}\n`));
  if (!stanza) throw new Error(`Debian ${s.suite} has no source ${s.package} ${s.version}`);
  const dir = stanza.match(/^Directory: (.+)$/m)[1];
  const upstream = s.version.replace(/^\d+:/, "").replace(/-[^-]+$/, "");
  const checksums = stanza.slice(stanza.indexOf("Checksums-Sha256:"));
  const orig = [".gz", ".xz", ".bz2"].map((x) => `${s.package}_${upstream}.orig.tar${x}`).find((o) => checksums.includes(` ${o}`));
  if (!orig) throw new Error(`Debian ${s.suite} source ${s.package} ${s.version} lists no .orig.tar.gz, .xz or .bz2`);
  const origSha = listedSha256(checksums, orig);
  // 3. The upstream tarball, built here (its one top folder: crun-1.21, passt-2025_05_03.587980c).
  writeFileSync(join(work, orig), verified(`${MIRROR}/${dir}/${orig}`, origSha));
  execFileSync("tar", ["-xf", orig], { cwd: work });
  const top = readdirSync(work, { withFileTypes: true }).find((d) => d.isDirectory());
  if (!top) throw new Error(`${orig} holds no folder`);
  const src = join(work, top.name);
  const log = join(cache, "logs", `${s.id}-${pathVersion(s)}.log`);
  mkdirSync(join(cache, "logs"), { recursive: true });
  const run = (cmd, args) => {
    try {
      const o = execFileSync(cmd, args, { cwd: src, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 256 << 20 });
      writeFileSync(log, `$ ${cmd} ${args.join(" ")}\n${o}`, { flag: "a" });
    } catch (e) {
      writeFileSync(log, `$ ${cmd} ${args.join(" ")}\n${e.stdout ?? ""}${e.stderr ?? ""}`, { flag: "a" });
      throw new Error(`${cmd} ${args[0] ?? ""} failed; see ${log}`);
    }
  };
  // (no "configure": a plain Makefile, as passt's)
  if (s.configure) run("./configure", s.configure);
  // A Kconfig tree (busybox): upstream's defconfig, then the entry's settings ("y", or "n" to unset).
  if (s.kconfig) {
    run("make", ["defconfig"]);
    let config = readFileSync(join(src, ".config"), "utf8");
    for (const [k, v] of Object.entries(s.kconfig)) {
      const line = v === "n" ? `# ${k} is not set` : `${k}=${v}`;
      const re = new RegExp(`^(${k}=.*|# ${k} is not set)$`, "m");
      if (!re.test(config)) throw new Error(`${s.id}: defconfig has no ${k}`);
      config = config.replace(re, line);
    }
    writeFileSync(join(src, ".config"), config);
  }
  for (const targets of s.make) run("make", targets);
  mkdirSync(join(out, "bin"), { recursive: true });
  const binaries = s.binaries.map((b) => {
    const path = join(out, "bin", b);
    copyFileSync(join(src, b), path);
    execFileSync("chmod", ["0755", path]);
    return { name: b, path, sha256: fileSha256(path), version: firstVersionLine(path, b) };
  });
  const j = {
    id: s.id,
    module: `Debian ${s.suite} source ${s.package}`,
    version: s.version,
    source: `Debian ${s.suite} source package ${s.package} ${s.version} (${orig}, sha256 ${origSha}), built on this machine`,
    seconds: Math.round((Date.now() - t0) / 100) / 10,
    binaries,
  };
  writeFileSync(meta, `${JSON.stringify(j, null, 2)}\n`);
  rmSync(work, { recursive: true, force: true });
  say(`built ${s.id} in ${j.seconds}s: ${binaries.map((b) => `${b.name} (${b.version})`).join("; ")}`);
  return { ...j, cached: false };
}

/** Builds every debianSources entry; returns them by id ({version, bin: {name: path}, source}). */
export function buildDebianSources({ cache, say = console.log }) {
  const out = {};
  for (const s of loadManifest().debianSources ?? []) {
    const r = buildOne(s, { cache, say });
    out[s.id] = { version: r.version, bin: Object.fromEntries(r.binaries.map((b) => [b.name, b.path])), source: r.source, build: r };
  }
  return out;
}
