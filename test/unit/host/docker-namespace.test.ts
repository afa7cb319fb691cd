// The address of rootless dockerd's network namespace (issue 42), read as the docker probe reads it:
// docker.pid beside the socket, then `nsenter -U --preserve-credentials -n -t PID ip -j -4 addr
// show dev tap0`. A real user and network namespace stands in for dockerd-rootless.sh's RootlessKit
// child (unshare -Urn), with a tap device tap0 holding the address, as RootlessKit's slirp4netns
// driver makes it.
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { localHost } from "../../../cli/host/host";
import { dockerNamespaceAddress } from "../../../cli/host/probes/runtimes";
import type { ProbeContext } from "../../../cli/host/probes/context";
import { tempDir } from "../../helpers/temp";

let child: ChildProcess | null = null;
afterEach(() => {
  child?.kill("SIGKILL");
  child = null;
});

function ctx(notes: string[]): ProbeContext {
  return {
    host: localHost(),
    user: { name: "u", uid: process.getuid?.() ?? 0, gid: 0, home: null, other: false },
    dataDir: "/nonexistent",
    ports: [],
    apiPortFixed: false,
    ownPorts: [],
    rootlesskitPath: "rootlesskit",
    note: (m) => notes.push(m),
  };
}

/** A process in its own user and network namespace whose tap0 holds `cidr`; resolves with its pid once it does. */
function namespaceWith(cidr: string): Promise<number> {
  const script = `ip tuntap add tap0 mode tap && ip addr add ${cidr} dev tap0 && echo ready && exec sleep 60`;
  child = spawn("unshare", ["-Urn", "sh", "-c", script], { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    child!.stdout!.on("data", (d: Buffer) => (String(d).includes("ready") ? resolve(child!.pid!) : undefined));
    child!.on("exit", (code) => reject(new Error(`unshare exited ${code}`)));
  });
}

describe("dockerNamespaceAddress", () => {
  it("reads tap0's address inside the namespace whose pid docker.pid holds, beside the socket", async () => {
    const dir = tempDir("rk8s-dockerns-");
    const pid = await namespaceWith("10.0.3.100/24");
    writeFileSync(join(dir, "docker.pid"), `${pid}\n`);
    const notes: string[] = [];
    expect(await dockerNamespaceAddress(ctx(notes), `unix://${join(dir, "docker.sock")}`)).toBe("10.0.3.100/24");
    expect(notes).toEqual([]);
  });

  it("is null without a docker.pid, or with one whose process is gone (the plan then takes slirp4netns' default)", async () => {
    const dir = tempDir("rk8s-dockerns-");
    expect(await dockerNamespaceAddress(ctx([]), `unix://${join(dir, "docker.sock")}`)).toBeNull();
    writeFileSync(join(dir, "docker.pid"), "999999999\n");
    expect(await dockerNamespaceAddress(ctx([]), `unix://${join(dir, "docker.sock")}`)).toBeNull();
  });
});
