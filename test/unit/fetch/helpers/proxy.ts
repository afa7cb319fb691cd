// A real forward proxy on 127.0.0.1: CONNECT tunnels (for https targets) and absolute-form
// requests (for http targets). It logs what it relayed, to prove HTTPS_PROXY / HTTP_PROXY are used.
import * as http from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";

export interface TestProxy {
  readonly url: string;
  /** "CONNECT 127.0.0.1:1234" or "GET http://127.0.0.1:1234/path". */
  readonly log: string[];
  close(): Promise<void>;
}

export async function startProxy(): Promise<TestProxy> {
  const log: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    log.push(`${req.method} ${req.url}`);
    const target = new URL(req.url ?? "");
    const up = http.request(
      { host: target.hostname, port: target.port, path: target.pathname + target.search, method: req.method, headers: req.headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on("error", () => res.writeHead(502).end());
    req.pipe(up);
  });
  server.on("connect", (req: http.IncomingMessage, client: Socket, head: Buffer) => {
    log.push(`CONNECT ${req.url}`);
    const [host, port] = (req.url ?? "").split(":");
    const upstream = connect(Number(port), host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
