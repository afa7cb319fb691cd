// A port claimed, not just planned (cli/apply/port-claim.ts), on real loopback sockets: install
// binds the API port it chose until RootlessKit starts; a second install at the same moment finds
// it bound and moves on, even when its reading of /proc/net/tcp showed the port free.
import * as net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { claimApiPort } from "../../../cli/apply/install";
import { claimPort, lostPortError, portsHeldByOthers, type PortClaim } from "../../../cli/apply/port-claim";
import { createPrompter } from "../../../cli/ui/prompt";
import { makeStyle, type Output } from "../../../cli/ui/output";
import { freePort, listen } from "../../helpers/net";
import { baseFacts, withFacts } from "../plan/facts-builder";

function captured(): Output & { lines: string[] } {
  const lines: string[] = [];
  const style = makeStyle(false);
  return { lines, style, errStyle: style, interactive: false, ci: true, out: (l = "") => lines.push(l), err: (l = "") => lines.push(l) };
}

/** Whether address:port can be bound now. */
async function bindable(port: number): Promise<boolean> {
  const r = await claimPort("127.0.0.1", port);
  if (r.ok) await r.claim.release();
  return r.ok;
}

const held: PortClaim[] = [];
afterEach(async () => {
  for (const c of held.splice(0)) await c.release();
});

describe("claimPort", () => {
  it("holds the port until released; a second claim meanwhile gets EADDRINUSE", async () => {
    const port = await freePort();
    const a = await claimPort("127.0.0.1", port);
    if (!a.ok) throw new Error(a.code);
    held.push(a.claim);
    expect(await claimPort("127.0.0.1", port)).toEqual({ ok: false, code: "EADDRINUSE" });
    // A wildcard bind by someone else is refused too (what RootlessKit or another user's node would try).
    expect(await claimPort("0.0.0.0", port)).toEqual({ ok: false, code: "EADDRINUSE" });
    await a.claim.release();
    await a.claim.release(); // idempotent
    expect(await bindable(port)).toBe(true);
  });
});

describe("claimApiPort: two installs at the same moment", () => {
  it("both read the wanted port free; the one that binds second moves on, says so, and each holds its own", async () => {
    const wanted = await freePort();
    // Both installs read the host before either claimed: nothing listens on `wanted` in their facts.
    const facts = withFacts(baseFacts(), (f) => {
      f.network.listeners = [];
      f.network.wantedPorts = [wanted];
    });
    const outA = captured();
    const outB = captured();
    const [a, b] = await Promise.all([
      claimApiPort(createPrompter({ out: outA, yes: true, stdinIsTTY: false }), facts, {}),
      claimApiPort(createPrompter({ out: outB, yes: true, stdinIsTTY: false }), facts, {}),
    ]);
    held.push(...[a.claim, b.claim].filter((c): c is PortClaim => c !== null));
    expect(a.claim && b.claim).toBeTruthy();
    expect(new Set([a.port, b.port]).size).toBe(2);
    expect([a.port, b.port]).toContain(wanted);
    const loser = a.port === wanted ? outB : outA;
    const moved = a.port === wanted ? b.port : a.port;
    expect(loser.lines.join("\n")).toMatch(
      new RegExp(
        `Port ${wanted} is taken by another program\\. Which port should the API server be published on\\? -> ${moved} \\(not asked\\)`,
      ),
    );
    // Each port is really held until its install lets it go.
    expect(await bindable(a.port)).toBe(false);
    expect(await bindable(b.port)).toBe(false);
  });

  it("--api-port on a port bound since the reading: exit 3, naming the port and a free one", async () => {
    const port = await freePort();
    const other = await listen(net.createServer(), { port });
    try {
      const facts = withFacts(baseFacts(), (f) => {
        f.network.listeners = [];
        f.network.wantedPorts = [port];
        f.network.apiPortFixed = true;
      });
      const e = await claimApiPort(createPrompter({ out: captured(), yes: true, stdinIsTTY: false }), facts, { apiPort: port }).catch(
        (x) => x,
      );
      expect(e).toMatchObject({ exitCode: 3, message: `--api-port ${port} is taken by another program` });
      expect(e.fix).toMatch(/^choose a free port: rootless-k8s install --api-port \d+/);
    } finally {
      await other.close();
    }
  });
});

describe("a published port another user took while the node started", () => {
  it("is found by its socket's owner and named in the error, with the way on", async () => {
    const port = await freePort();
    const other = await listen(net.createServer(), { port });
    try {
      const plan = {
        user: { uid: 99999 },
        ports: { apiServer: port },
        network: { published: [{ hostIP: "127.0.0.1", hostPort: port, namespacePort: port, protocol: "tcp" }] },
      } as never;
      // As the node's user 99999 would see it: this test's socket is another user's.
      const [lost] = await portsHeldByOthers(plan, 99999);
      const me = process.getuid?.() ?? 0;
      expect(lost).toMatchObject({ port, address: "127.0.0.1" });
      expect(lost!.holder).toMatch(new RegExp(`uid ${me}\\)?$`));
      const e = lostPortError(plan, lost!);
      expect(e.exitCode).toBe(3);
      expect(e.message).toBe(`RootlessKit could not publish the API server on 127.0.0.1:${port}: ${lost!.holder} holds that port`);
      expect(e.fix).toMatch(/re-run `rootless-k8s install`: it moves the API server to a free port/);
      // The node's own uid holding it is no loss.
      expect(await portsHeldByOthers(plan, me)).toEqual([]);
      expect(await portsHeldByOthers(plan)).toEqual([]); // by default, this process's uid
    } finally {
      await other.close();
    }
  });
});
