// A cluster CA, a serving cert for 127.0.0.1 and an admin client cert, made with the real openssl CLI,
// plus a kubeconfig that uses them: what the readiness tests need to talk mutual TLS on loopback.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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

function openssl(dir: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", `/CN=${name}`, "-keyout", `${name}.key`, "-out", `${name}.crt`]);
}

function makeLeaf(dir: string, ca: string, name: string, subj: string, ext: string): void {
  openssl(dir, ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", subj, "-keyout", `${name}.key`, "-out", `${name}.csr`]);
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-days", "2", "-extfile", `${name}.ext`, "-out", `${name}.crt`]);
}

export function makeTlsFixture(): TlsFixture {
  const dir = mkdtempSync(join(tmpdir(), "rk8s-tls-"));
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
