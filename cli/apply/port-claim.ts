// A host port claimed, not just planned: install listens on the API port it chose from the moment it
// chooses it until just before RootlessKit starts and publishes it. Two installs at the same moment
// then cannot both take 6443: the second one's bind fails (EADDRINUSE), and it moves on. The socket
// never accepts a connection, and goes with the process if install is interrupted or killed.
import { readFile } from "node:fs/promises";
import * as net from "node:net";
import { holdersOf, holderWords } from "../doctor/port-choice";
import { ExitCode, UserError } from "../errors";
import { readListeners } from "../host/probes/network";
import type { Plan } from "../plan/plan";

export interface PortClaim {
  port: number;
  address: string;
  /** Lets the port go (idempotent): just before RootlessKit binds it. */
  release(): Promise<void>;
}

export type ClaimResult = { ok: true; claim: PortClaim } | { ok: false; code: string };

/** Listens on address:port (exclusive, backlog 1, the process not held open by it); EADDRINUSE and EACCES come back as results. */
export function claimPort(address: string, port: number): Promise<ClaimResult> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.destroy());
    server.once("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EADDRINUSE" || e.code === "EACCES" || e.code === "EADDRNOTAVAIL") resolve({ ok: false, code: e.code });
      else reject(e);
    });
    server.listen({ host: address, port, exclusive: true, backlog: 1 }, () => {
      server.unref();
      let closed: Promise<void> | null = null;
      const release = () => {
        closed ??= new Promise<void>((done) => server.close(() => done()));
        return closed;
      };
      resolve({ ok: true, claim: { port, address, release } });
    });
  });
}

/** A port the plan publishes that another uid holds now: what a RootlessKit that cannot publish it ran into. */
export interface LostPort {
  port: number;
  address: string;
  holder: string;
}

/**
 * The plan's published ports that a uid other than `uid` (this process's: the node's user) holds
 * now (their sockets, /proc/net/tcp and tcp6): named in the error when the node does not start,
 * instead of the unit's "address already in use".
 */
export async function portsHeldByOthers(plan: Plan, uid: number = process.getuid?.() ?? plan.user.uid): Promise<LostPort[]> {
  const { listeners, listenerNames: names } = await readListeners((f) => readFile(f, "utf8").catch(() => null));
  const lost: LostPort[] = [];
  for (const p of plan.network.published) {
    const others = holdersOf(listeners, p.hostPort).filter((u) => u !== uid);
    if (others.length) lost.push({ port: p.hostPort, address: p.hostIP, holder: holderWords(others, names) });
  }
  return lost;
}

/** The error of a node whose API port another user took while it started: names the holder, and the way on. */
export function lostPortError(plan: Plan, lost: LostPort): UserError {
  const api = plan.network.published.some((p) => p.hostPort === lost.port && p.namespacePort === plan.ports.apiServer);
  return new UserError(
    `RootlessKit could not publish ${api ? "the API server" : "the node"} on ${lost.address}:${lost.port}: ${lost.holder} holds that port`,
    {
      exitCode: ExitCode.Refused,
      fix: api
        ? "re-run `rootless-k8s install`: it moves the API server to a free port and says which (or choose one with --api-port N)"
        : `stop what listens on ${lost.port} (ss -ltnp 'sport = :${lost.port}'), then re-run the same command`,
    },
  );
}
