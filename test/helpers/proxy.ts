// A real forward proxy on 127.0.0.1: CONNECT tunnels (for https targets) and absolute-form
// requests (for http targets). It logs what it relayed, to prove HTTPS_PROXY / HTTP_PROXY are used.
// `hosts` sends a host name to another address, as DNS would: a test can ask for a name that does
// not resolve (releases.invalid) and still be answered, through the proxy only.
import * as http from "node:http";
import { connect } from "node:net";
import { listen } from "./net";

export interface TestProxy {
  readonly url: string;
  /** "CONNECT 127.0.0.1:1234" or "GET http://127.0.0.1:1234/path". */
  readonly log: string[];
  close(): Promise<void>;
}

export async function startProxy(opts: { hosts?: Record<string, string> } = {}): Promise<TestProxy> {
  const log: string[] = [];
  /** host and port to connect to for `host` and `port`. */
  const route = (host: string, port: string): [string, number] => {
    const to = opts.hosts?.[host];
    if (!to) return [host, Number(port)];
    const [h, p] = to.split(":");
    return [h!, Number(p)];
  };
  const server = http.createServer((req, res) => {
    log.push(`${req.method} ${req.url}`);
    const target = new URL(req.url ?? "");
    const [host, port] = route(target.hostname, target.port || "80");
    const up = http.request({ host, port, path: target.pathname + target.search, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.writeHead(502).end());
    req.pipe(up);
  });
  server.on("connect", (req: http.IncomingMessage, client, head: Buffer) => {
    log.push(`CONNECT ${req.url}`);
    const [host, port] = route(...((req.url ?? "").split(":") as [string, string]));
    const upstream = connect(port, host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
  });
  const { url, close } = await listen(server);
  return { url, log, close };
}
