// Loopback servers for tests: listen on 127.0.0.1 (any free port unless one is named), with the URL
// to reach the server and a close that also ends open connections (a stalled response must not keep
// a test file alive); and a port that is free right now.
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { Server as TlsServer } from "node:tls";

export interface Listening {
  /** http://127.0.0.1:PORT, or https:// for a TLS server. */
  url: string;
  port: number;
  /** Ends every open connection and stops listening. */
  close(): Promise<void>;
}

export async function listen(server: Server, opts: { host?: string; port?: number } = {}): Promise<Listening> {
  const host = opts.host ?? "127.0.0.1";
  const sockets = new Set<Socket>();
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${server instanceof TlsServer ? "https" : "http"}://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A TCP port on `host` that nothing listens on right now (bound, then released). */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const probe = await listen(createServer(), { host });
  await probe.close();
  return probe.port;
}
