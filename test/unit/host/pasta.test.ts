// Whether RootlessKit can drive a host's pasta (cli/host/pasta.ts), on the real `pasta --version`
// texts of the corpus and the real answers to RootlessKit's own probe (--host-lo-to-ns-lo).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { PastaFacts } from "../../../cli/host/facts";
import { pastaBlocker } from "../../../cli/host/pasta";
import { parsePastaVersion } from "../../../cli/host/parse/versions";

const gathered = (f: string) => readFileSync(join(__dirname, "../../fixtures/corpus/gathered/pasta", f), "utf8");
const pasta = (text: string, hostLoToNsLo: boolean): PastaFacts => ({
  path: "/usr/bin/pasta",
  raw: null,
  version: parsePastaVersion(text).version,
  hostLoToNsLo,
});

describe("pastaBlocker", () => {
  it("refuses Debian 12's snapshot build: no version, and the 2024_10_30 option is unknown to it", () => {
    const why = pastaBlocker(pasta(gathered("debian12-pasta-snapshot.txt"), false));
    expect(why).toMatch(
      /^pasta at \/usr\/bin\/pasta \(it prints no version and lacks --host-lo-to-ns-lo of 2024_10_30\) is older than 2023_12_04/,
    );
    expect(why).toMatch(/forwards no port while the node keeps pods off the host's loopback/);
  });
  it("refuses Fedora 38's 2023_05_09, older than RootlessKit's floor", () => {
    expect(pastaBlocker(pasta(gathered("podman-18561-passt-2023_05_09.txt"), false))).toMatch(
      /^pasta 2023_05_09\.96f8d55-10-gf1e0a67 is older than 2023_12_04/,
    );
  });
  it("accepts Debian 13's build (its package version read as 2025_05_03) and the floor itself", () => {
    const debian13 = gathered("debian13-pasta-source-build.txt");
    expect(parsePastaVersion(debian13).version).toBe("2025_05_03.587980c");
    expect(pastaBlocker(pasta(debian13, true))).toBeNull();
    expect(pastaBlocker(pasta("pasta 2023_12_04.b86afe3\n", false))).toBeNull();
    expect(pastaBlocker(pasta("pasta 2023_11_19.4f1709d\n", false))).toMatch(/older than 2023_12_04/);
  });
  it("accepts a pasta whose --version text is lost (a pipe) once it knows --host-lo-to-ns-lo", () => {
    expect(pastaBlocker(pasta("", true))).toBeNull();
  });
});
