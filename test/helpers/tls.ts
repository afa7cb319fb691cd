// Test certificates made with the real openssl CLI: CAs, and leaves (servers, clients) they sign.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp";

function openssl(dir: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
}

/** A self-signed EC P-256 CA in `dir`: <name>.crt and <name>.key, valid 2 days, with the common name `cn`. */
export function makeCa(dir: string, name: string, cn = name): void {
  openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-days",
    "2",
    "-subj",
    `/CN=${cn}`,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
  ]);
}

/** A key and a certificate <name>.key/.crt for `subj`, signed by the CA `ca` in `dir`, with the x509v3 extensions `ext`. */
export function makeLeaf(dir: string, ca: string, name: string, subj: string, ext: string): void {
  openssl(dir, [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-subj",
    subj,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
  ]);
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.crt`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
    "-out",
    `${name}.crt`,
  ]);
}

export interface TlsMaterial {
  dir: string;
  caCert: string;
  caFile: string;
  key: string;
  cert: string;
}

/** A test CA and a server certificate for 127.0.0.1 / localhost, in a temporary folder. */
export function makeTestCa(): TlsMaterial {
  const dir = tempDir("rk8s-ca-");
  makeCa(dir, "ca", "rootless-k8s test CA");
  makeLeaf(dir, "ca", "server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n");
  return {
    dir,
    caFile: join(dir, "ca.crt"),
    caCert: readFileSync(join(dir, "ca.crt"), "utf8"),
    key: readFileSync(join(dir, "server.key"), "utf8"),
    cert: readFileSync(join(dir, "server.crt"), "utf8"),
  };
}
