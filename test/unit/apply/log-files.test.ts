// The units' log files where there is no journal (issue 43): rotation past the cap with a bounded
// number of generations, done in place so a writer holding an O_APPEND descriptor (systemd's
// StandardOutput=append:) writes on at the new end; and reading the last lines across generations.
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
  closeSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rotateLogFiles } from "../../../cli/apply/log-files";
import { lastLogLines, logGenerations } from "../../../cli/clients/systemd";
import { tempDir } from "../../helpers/temp";

const numbered = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`).join("\n") + "\n";

describe("rotateLogFiles", () => {
  it("rotates only files past the cap, keeps the given generations, and drops the oldest", async () => {
    const d = tempDir("rk8s-logs-");
    const kubelet = join(d, "rootless-k8s-kubelet.service.log");
    const etcd = join(d, "rootless-k8s-etcd.service.log");
    writeFileSync(etcd, numbered(1, 10));
    for (let round = 1; round <= 3; round++) {
      writeFileSync(kubelet, numbered(round * 1000, round * 1000 + 199));
      const r = await rotateLogFiles(d, 1000, 2);
      expect(r.map((x) => x.file)).toEqual([kubelet]);
    }
    expect(statSync(kubelet).size).toBe(0);
    expect(readFileSync(`${kubelet}.1`, "utf8")).toBe(numbered(3000, 3199));
    expect(readFileSync(`${kubelet}.2`, "utf8")).toBe(numbered(2000, 2199));
    expect(existsSync(`${kubelet}.3`)).toBe(false);
    expect(readFileSync(etcd, "utf8")).toBe(numbered(1, 10)); // under the cap: untouched
    expect(existsSync(`${etcd}.1`)).toBe(false);
  });

  it("empties the file in place: a writer's O_APPEND descriptor writes on at its start", async () => {
    const d = tempDir("rk8s-logs-");
    const f = join(d, "u.log");
    const fd = openSync(f, "a");
    writeSync(fd, numbered(1, 500));
    await rotateLogFiles(d, 100, 2);
    writeSync(fd, "after the rotation\n");
    closeSync(fd);
    expect(readFileSync(f, "utf8")).toBe("after the rotation\n");
    expect(readFileSync(`${f}.1`, "utf8")).toBe(numbered(1, 500));
  });

  it("leaves a symbolic link alone, and a missing folder is nothing to do", async () => {
    const d = tempDir("rk8s-logs-");
    const target = join(d, "elsewhere");
    writeFileSync(target, numbered(1, 500));
    symlinkSync(target, join(d, "link.log"));
    expect(await rotateLogFiles(d, 100, 2)).toEqual([]);
    expect(readFileSync(target, "utf8")).toBe(numbered(1, 500));
    expect(await rotateLogFiles(join(d, "missing"), 100, 2)).toEqual([]);
  });
});

describe("lastLogLines", () => {
  it("reads the last lines across the generations, oldest first", async () => {
    const d = tempDir("rk8s-logs-");
    mkdirSync(d, { recursive: true });
    const f = join(d, "u.log");
    writeFileSync(`${f}.2`, numbered(1, 100));
    writeFileSync(`${f}.1`, numbered(101, 200));
    writeFileSync(f, numbered(201, 230));
    expect(await lastLogLines(f, 5)).toEqual(numbered(226, 230).trim().split("\n"));
    expect(await lastLogLines(f, 50)).toEqual(numbered(181, 230).trim().split("\n"));
    expect((await lastLogLines(f, 1000))?.length).toBe(230);
    expect(logGenerations(f)).toEqual([f, `${f}.1`, `${f}.2`]);
    expect(await lastLogLines(join(d, "none.log"), 5)).toBeNull();
  });

  it("reads a large file from its end without losing or cutting lines", async () => {
    const d = tempDir("rk8s-logs-");
    const f = join(d, "big.log");
    // About 3.3 MiB: more than one 1 MiB chunk, so a line crosses a chunk's edge.
    for (let i = 0; i < 10; i++) appendFileSync(f, numbered(i * 30000 + 1, (i + 1) * 30000));
    const last = await lastLogLines(f, 100000);
    expect(last?.length).toBe(100000);
    expect(last?.[0]).toBe("line 200001");
    expect(last?.at(-1)).toBe("line 300000");
  });
});
