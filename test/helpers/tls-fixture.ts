// A cluster CA, a serving cert for 127.0.0.1 and an admin client cert, made with the real openssl CLI
// (test/helpers/tls.ts), plus a kubeconfig that uses them: what the readiness tests need to talk
// mutual TLS on loopback. The folder is removed after the test file.
import { readFileSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import * as https from "node:https";
import { join } from "node:path";
import { listen, type Listening } from "./net";
import { tempDir } from "./temp";
import { makeCa, makeLeaf } from "./tls";

export interface TlsFixture {
  dir: string;
  ca: Buffer;
  serverCert: Buffer;
  serverKey: Buffer;
  clientCert: Buffer;
  clientKey: Buffer;
  /** A client cert signed by another CA: must be refused. */
  strangerCert: Buffer;
  strangerKey: Buffer;
  kubeconfig(server: string, opts?: { stranger?: boolean }): string;
}

export function makeTlsFixture(): TlsFixture {
  const dir = tempDir("rk8s-tls-");
  makeCa(dir, "ca");
  makeCa(dir, "other-ca");
  makeLeaf(dir, "ca", "server", "/CN=kube-apiserver", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  makeLeaf(dir, "ca", "admin", "/O=system:masters/CN=kubernetes-admin", "extendedKeyUsage=clientAuth\n");
  makeLeaf(dir, "other-ca", "stranger", "/O=system:masters/CN=stranger", "extendedKeyUsage=clientAuth\n");
  const read = (f: string) => readFileSync(join(dir, f));
  const b64 = (f: string) => read(f).toString("base64");
  return {
    dir,
    ca: read("ca.crt"),
    serverCert: read("server.crt"),
    serverKey: read("server.key"),
    clientCert: read("admin.crt"),
    clientKey: read("admin.key"),
    strangerCert: read("stranger.crt"),
    strangerKey: read("stranger.key"),
    kubeconfig(server, opts = {}) {
      const who = opts.stranger ? "stranger" : "admin";
      const file = join(dir, `${who}-${Math.random().toString(16).slice(2)}.kubeconfig`);
      writeFileSync(
        file,
        [
          "apiVersion: v1",
          "kind: Config",
          "clusters:",
          "- name: rootless-k8s",
          "  cluster:",
          `    server: ${server}`,
          `    certificate-authority-data: ${b64("ca.crt")}`,
          "users:",
          "- name: admin",
          "  user:",
          `    client-certificate-data: ${b64(`${who}.crt`)}`,
          `    client-key-data: ${b64(`${who}.key`)}`,
          "contexts:",
          "- name: rootless-k8s",
          "  context: {cluster: rootless-k8s, user: admin}",
          "current-context: rootless-k8s",
          "",
        ].join("\n"),
        { mode: 0o600 },
      );
      return file;
    },
  };
}

/**
 * An HTTPS server on 127.0.0.1 with the fixture's serving certificate that requires a client
 * certificate of its CA (mutual TLS, as the API server); a request whose handler throws is
 * answered by `failed` (a 500 in the fixture's own words).
 */
export async function listenMutualTls(
  tls: TlsFixture,
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<unknown>,
  failed: (res: ServerResponse, e: Error) => void,
): Promise<{ server: https.Server; listening: Listening }> {
  const server = https.createServer(
    { key: tls.serverKey, cert: tls.serverCert, ca: tls.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      handler(req, res).catch((e: Error) => failed(res, e));
    },
  );
  return { server, listening: await listen(server) };
}
