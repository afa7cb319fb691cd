// Builds the upstream components of the e2e node from their Go modules, each at the version the
// test manifest (test/e2e/build/components.json) names. Test tooling, never part of the product.
//
//   node test/e2e/build/build-components.mjs [--cache DIR] [--only ID,ID] [--suite conformance] [--list]
//
// Each build is a throwaway main module that requires the upstream module at its version (and,
// for k8s.io/kubernetes, replaces its v0.0.0 staging modules with the matching v0.x.y), starts
// from the upstream go.sum, and runs `go build -trimpath` for each package. Versions are stamped
// through -ldflags as upstream's release builds do (k8s.io/component-base/version and
// k8s.io/client-go/pkg/version for Kubernetes), so `kubelet --version` and the Node's
// kubeletVersion say the real version.
//
// C programs that live inside a Go module (CRI-O's pinns) are built with the module's own
// Makefile: the entry's "make" maps a binary to {dir, output}, the folder is copied out of the
// read-only module cache and `make -C dir` runs there; output is where that Makefile puts it,
// relative to the copy of the module root (pinns/Makefile writes ../bin/pinns).
//
// An entry with "local" (a folder of this repository with its own go.mod and go.sum) is e2e
// tooling of ours, built in place the same way; its cache key covers its files.
//
// Results are cached outside the repo in DIR/<id>/<version>-go<go version>-<recipe hash>/ with a
// build.json (module, version, Go version, seconds, each binary's sha256 and first --version
// line): a warm run builds nothing. DIR defaults to $E2E_BUILD_CACHE or /var/tmp/rk8s-build.
// Exit status: 0 when every build is present, 1 when one failed (its log is named), 2 bad usage.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const REPO = join(here, "..", "..", "..");
const GO = process.env.GO ?? (existsSync("/usr/local/go/bin/go") ? "/usr/local/go/bin/go" : "go");
// Bump when the way a build is made changes: every cached build is then made again.
const RECIPE_VERSION = 1;

function goEnv() {
  return { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod -buildvcs=false", PATH: `${dirname(GO)}:${process.env.PATH}` };
}

function go(args, { cwd, env, log } = {}) {
  const r = spawnSync(GO, args, { cwd, env: env ?? goEnv(), encoding: "utf8", maxBuffer: 256 << 20 });
  if (log) writeFileSync(log, `$ go ${args.join(" ")}\n${r.stdout}${r.stderr}`, { flag: "a" });
  if (r.status !== 0) {
    const e = new Error(`go ${args.slice(0, 3).join(" ")} failed (exit ${r.status})${log ? `; see ${log}` : `: ${r.stderr.slice(-2000)}`}`);
    e.stderr = r.stderr;
    throw e;
  }
  return r.stdout;
}

export function goVersion() {
  return go(["env", "GOVERSION"]).trim();
}

/** `go mod download -json M@V`: the module's source folder, go.mod, .info. */
function download(module, version, log) {
  const j = JSON.parse(go(["mod", "download", "-json", `${module}@${version}`], { log }));
  if (j.Error) throw new Error(`${module}@${version}: ${j.Error}`);
  return { dir: j.Dir, goMod: j.GoMod, info: JSON.parse(readFileSync(j.Info, "utf8")) };
}

function modJson(goMod) {
  return JSON.parse(go(["mod", "edit", "-json", goMod]));
}

export const sha256 = (file) => createHash("sha256").update(readFileSync(file)).digest("hex");

export function firstVersionLine(bin, name) {
  const tries =
    name === "crictl" || name === "ctr"
      ? [["--version"]]
      : name === "etcdctl"
        ? [["version"]]
        : name === "kubectl"
          ? [["version", "--client"]]
          : [["--version"], ["version"], ["-version"]];
  for (const args of tries) {
    const r = spawnSync(bin, args, { encoding: "utf8", timeout: 20000 });
    const line = `${r.stdout}\n${r.stderr}`
      .split("\n")
      .map((l) => l.trim())
      .find((l) => /\d+\.\d+/.test(l));
    if (r.status === 0 && line) return line;
  }
  return "";
}

function ldflagsFor(b, info) {
  const bare = b.version.replace(/^v/, "");
  const rev = info.Origin?.Hash ?? "module";
  const date = (info.Time ?? "1970-01-01T00:00:00Z").replace(/\.\d+Z$/, "Z");
  const subst = (s) =>
    s.replaceAll("{version}", b.version).replaceAll("{bare}", bare).replaceAll("{date}", date).replaceAll("=module", `=${rev}`);
  const flags = ["-s", "-w"];
  if (b.recipe === "kubernetes") {
    const [maj, min] = bare.split(".");
    for (const pkg of ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"]) {
      flags.push(
        `-X ${pkg}.gitVersion=${b.version}`,
        `-X ${pkg}.gitMajor=${maj}`,
        `-X ${pkg}.gitMinor=${min}`,
        `-X ${pkg}.gitCommit=${rev}`,
        `-X ${pkg}.gitTreeState=clean`,
        `-X ${pkg}.buildDate=${date}`,
      );
    }
  }
  if (b.ldflags) flags.push(subst(b.ldflags));
  return flags.join(" ");
}

/** The throwaway main module that builds `b`: requires it, keeps its versioned replaces, its go.sum. */
function wrapper(b, src, work, log) {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const up = modJson(src.goMod);
  const lines = [`module rk8s.build/${b.id}`, "", `go ${up.Go ?? "1.22"}`, ""];
  for (const g of up.Godebug ?? []) lines.push(`godebug ${g.Key}=${g.Value}`);
  lines.push("", `require ${b.module} ${b.version}`, "");
  for (const r of up.Replace ?? []) {
    const local = !r.New.Version; // ./staging/src/... or ../api: not in the module zip
    if (b.recipe === "kubernetes" && local && r.Old.Path.startsWith("k8s.io/"))
      lines.push(`replace ${r.Old.Path} => ${r.Old.Path} ${b.staging}`);
    else if (!local) lines.push(`replace ${r.Old.Path}${r.Old.Version ? ` ${r.Old.Version}` : ""} => ${r.New.Path} ${r.New.Version}`);
  }
  writeFileSync(join(work, "go.mod"), `${lines.join("\n")}\n`);
  const sum = join(src.dir, "go.sum");
  if (existsSync(sum)) copyFileSync(sum, join(work, "go.sum"));
  writeFileSync(log, `wrapper go.mod:\n${lines.join("\n")}\n\n`, { flag: "a" });
}

/** The module cache is read-only; a copy of one of its folders must be writable to build in. */
function makeWritable(dir) {
  const r = spawnSync("chmod", ["-R", "u+w", dir]);
  if (r.status !== 0) throw new Error(`chmod -R u+w ${dir} failed`);
}

function ensureDebs(debs) {
  const missing = debs.filter(
    (p) => spawnSync("dpkg-query", ["-W", "-f=${Status}", p], { encoding: "utf8" }).stdout.indexOf("install ok installed") < 0,
  );
  if (!missing.length) return;
  const inst = () =>
    spawnSync("apt-get", ["install", "-y", "--no-install-recommends", ...missing], {
      stdio: "ignore",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    }).status === 0;
  if (!inst()) {
    spawnSync("apt-get", ["update"], { stdio: "ignore" });
    if (!inst()) throw new Error(`cannot install Debian packages ${missing.join(" ")} (apt-get; run as root)`);
  }
}

/** A local module's files (path and content), so that an edit makes a new build. */
function localSourceHash(b) {
  const h = createHash("sha256");
  const dir = join(REPO, b.local);
  for (const f of readdirSync(dir).sort()) h.update(f).update(readFileSync(join(dir, f)));
  return h.digest("hex");
}

export function buildKey(b, gover) {
  const local = b.local ? { source: localSourceHash(b) } : {};
  return createHash("sha256")
    .update(JSON.stringify({ b, gover, RECIPE_VERSION, ...local }))
    .digest("hex")
    .slice(0, 10);
}

export function outDir(cache, b, gover) {
  return join(cache, b.id, `${b.version}-${gover}-${buildKey(b, gover)}`);
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
};

/** One build of an output folder at a time (two runs of the e2e, or a run and a by-hand build). */
export function withLock(out, say, fn) {
  const lock = `${out}.lock`;
  mkdirSync(dirname(out), { recursive: true });
  let told = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, "pid"), String(process.pid));
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
      const pid = Number(readFileSync(join(lock, "pid"), { encoding: "utf8", flag: "a+" }) || 0);
      if (pid && !alive(pid)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (!told) say(`waiting for another build of ${out} (pid ${pid || "?"})`);
      told = true;
      sleep(2000);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Builds one entry of the manifest (or finds it built); returns its build.json. */
export function buildOne(b, { cache, gover, say = console.log }) {
  return withLock(outDir(cache, b, gover), say, () => buildOneLocked(b, { cache, gover, say }));
}

function buildOneLocked(b, { cache, gover, say }) {
  const out = outDir(cache, b, gover);
  const meta = join(out, "build.json");
  if (existsSync(meta)) {
    const j = JSON.parse(readFileSync(meta, "utf8"));
    if (j.binaries.every((x) => existsSync(x.path) && sha256(x.path) === x.sha256)) {
      // A version line an older probe missed is read again (kubectl answers only `version --client`).
      if (j.binaries.some((x) => !x.version)) {
        for (const x of j.binaries) x.version ||= firstVersionLine(x.path, x.name);
        writeFileSync(meta, `${JSON.stringify(j, null, 2)}\n`);
      }
      return { ...j, cached: true };
    }
  }
  const t0 = Date.now();
  const tmp = `${out}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(join(tmp, "bin"), { recursive: true });
  const log = join(cache, "logs", `${b.id}-${b.version}.log`);
  mkdirSync(dirname(log), { recursive: true });
  writeFileSync(log, `build ${b.id} ${b.module}@${b.version} with ${gover}\n`);
  say(`build ${b.id}: ${b.module}@${b.version} (${binaryNames(b).join(", ")}) with ${gover}; log ${log}`);
  if (b.debs) ensureDebs(b.debs);
  // A local module (e2e tooling in this repository, "local": its folder) builds in place, from
  // its own go.mod and go.sum; an upstream one through the throwaway wrapper module.
  const src = b.local ? { dir: join(REPO, b.local), info: {} } : download(b.module, b.version, log);
  const work = b.local ? src.dir : join(cache, "work", `${b.id}-${b.version}`);
  if (!b.local) wrapper(b, src, work, log);
  const env = { ...goEnv(), CGO_ENABLED: b.cgo ? "1" : "0" };
  const ldflags = ldflagsFor(b, src.info);
  const binaries = [];
  // "packages" are commands (go build); "testPackages" are test binaries (go test -c), as upstream
  // builds test/e2e into e2e.test.
  const targets = [
    ...Object.entries(b.packages ?? {}).map(([name, pkg]) => ({ name, pkg, verb: "build" })),
    ...Object.entries(b.testPackages ?? {}).map(([name, pkg]) => ({ name, pkg, verb: "test", extra: ["-c", "-vet=off"] })),
  ];
  for (const { name, pkg, verb, extra = [] } of targets) {
    const target = b.local ? `./${pkg}` : pkg === "." ? b.module : `${b.module}/${pkg}`;
    const args = [verb, ...extra, "-trimpath", "-ldflags", ldflags, "-o", join(tmp, "bin", name)];
    if (b.tags) args.push("-tags", b.tags.split(/\s+/).join(","));
    args.push(target);
    go(args, { cwd: work, env, log });
    binaries.push({ name, source: `${b.module}@${b.version}`, package: target });
  }
  for (const [name, m] of Object.entries(b.make ?? {})) {
    const root = join(work, "c-src");
    cpSync(join(src.dir, m.dir), join(root, m.dir), { recursive: true });
    makeWritable(join(root, m.dir));
    const r = spawnSync("make", ["-C", join(root, m.dir), ...(m.args ?? [])], { encoding: "utf8", maxBuffer: 64 << 20 });
    writeFileSync(log, `$ make -C ${m.dir}\n${r.stdout}${r.stderr}`, { flag: "a" });
    if (r.status !== 0) throw new Error(`make -C ${m.dir} failed (exit ${r.status}); see ${log}`);
    copyFileSync(join(root, m.output), join(tmp, "bin", name));
    chmodSync(join(tmp, "bin", name), 0o755);
    binaries.push({ name, source: `${b.module}@${b.version}`, package: `${b.module}/${m.dir} (make)` });
  }
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  const j = {
    id: b.id,
    module: b.module,
    version: b.version,
    ...(b.staging ? { staging: b.staging } : {}),
    goVersion: gover,
    revision: src.info.Origin?.Hash ?? null,
    seconds: Math.round((Date.now() - t0) / 100) / 10,
    binaries: binaries.map((x) => {
      const path = join(out, "bin", x.name);
      return { ...x, path, sha256: sha256(path), version: firstVersionLine(path, x.name) };
    }),
  };
  writeFileSync(meta, `${JSON.stringify(j, null, 2)}\n`);
  if (!b.local) rmSync(work, { recursive: true, force: true });
  say(`built ${b.id} in ${j.seconds}s: ${j.binaries.map((x) => `${x.name} (${x.version || "no version line"})`).join("; ")}`);
  return { ...j, cached: false };
}

/** The binaries an entry makes: its commands, test binaries and make outputs. */
export const binaryNames = (b) => [...Object.keys(b.packages ?? {}), ...Object.keys(b.testPackages ?? {}), ...Object.keys(b.make ?? {})];

export function loadManifest(file = join(here, "components.json")) {
  return JSON.parse(readFileSync(file, "utf8"));
}

/** Builds every entry (or `only`); writes DIR/builds.json with all of them. */
export function buildAll({ cache, only, suites = [], say = console.log }) {
  const gover = goVersion();
  const m = loadManifest();
  // An entry with "suite" (the conformance suite's e2e.test and ginkgo) is built only for that
  // suite (or when named in only): the node's scenarios never wait for it.
  const chosen = only ? m.builds.filter((b) => only.includes(b.id)) : m.builds.filter((b) => !b.suite || suites.includes(b.suite));
  const t0 = Date.now();
  const results = [];
  const failed = [];
  for (const b of chosen) {
    try {
      results.push(buildOne(b, { cache, gover, say }));
    } catch (e) {
      failed.push(`${b.id}: ${e.message}`);
      say(`FAIL build ${b.id}: ${e.message}`);
    }
  }
  const fresh = results.filter((r) => !r.cached);
  const summary = {
    goVersion: gover,
    seconds: Math.round((Date.now() - t0) / 100) / 10,
    built: fresh.map((r) => r.id),
    cached: results.filter((r) => r.cached).map((r) => r.id),
    builds: results,
    failed,
  };
  if (!only)
    writeFileSync(join(cache, suites.length ? `builds-${suites.join("-")}.json` : "builds.json"), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { cache: { type: "string" }, only: { type: "string" }, suite: { type: "string", multiple: true }, list: { type: "boolean" } },
  });
  const cache = values.cache ?? process.env.E2E_BUILD_CACHE ?? "/var/tmp/rk8s-build";
  mkdirSync(cache, { recursive: true });
  if (values.list) {
    for (const b of loadManifest().builds) console.log(`${b.id}\t${b.module}@${b.version}\t${binaryNames(b).join(",")}`);
    process.exit(0);
  }
  const s = buildAll({ cache, only: values.only?.split(","), suites: values.suite ?? [] });
  console.log(
    `components: ${s.built.length} built, ${s.cached.length} cached, ${s.failed.length} failed in ${s.seconds}s (${s.goVersion})`,
  );
  process.exit(s.failed.length ? 1 : 0);
}
