// Bootstrap tokens and the CA pin against upstream's own results: the detached JWS vector was
// computed by k8s.io/cluster-bootstrap v0.36.3's jws.ComputeDetachedSignature (go-jose v2.6.3,
// `go run` of a five-line program on 2026-12-03), and the pin is compared with the openssl
// pipeline kubeadm's documentation gives for --discovery-token-ca-cert-hash.
import { execSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  caHashOf,
  clusterOfKubeconfig,
  detachedSignature,
  jwsProblem,
  parseCaHash,
  parseToken,
  trustedCa,
} from "../../../cli/host/parse/bootstrap-token";
import { clusterInfoKubeconfig } from "../../../cli/render/join";
import { makeTestCa } from "../../helpers/tls";

const GO_CONTENT =
  'apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: dGVzdA==\n    server: https://192.0.2.10:6443\n  name: ""\nkind: Config\n';
const GO_TOKEN = { id: "abcdef", secret: "0123456789abcdef" };
const GO_JWS = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..2uxt8BkLPHKpe3ZWvIJdNhosrxFAymcPcuSv63EcKDM";

describe("detached JWS (the bootstrapsigner's signature of cluster-info)", () => {
  it("is the one cluster-bootstrap computes", () => {
    expect(detachedSignature(GO_CONTENT, GO_TOKEN)).toBe(GO_JWS);
    expect(jwsProblem(GO_JWS, GO_CONTENT, GO_TOKEN)).toBeNull();
  });
  it("fails on another secret, another id, other content or a non-detached form, saying which", () => {
    expect(jwsProblem(GO_JWS, GO_CONTENT, { id: "abcdef", secret: "0123456789abcdee" })).toMatch(/does not match the token's secret/);
    expect(jwsProblem(GO_JWS, GO_CONTENT, { id: "abcdeg", secret: GO_TOKEN.secret })).toMatch(/for token abcdef, not abcdeg/);
    expect(jwsProblem(GO_JWS, `${GO_CONTENT}# changed\n`, GO_TOKEN)).toMatch(/does not match/);
    const [h, , s] = GO_JWS.split(".");
    expect(jwsProblem(`${h}.eA.${s}`, GO_CONTENT, GO_TOKEN)).toMatch(/not a detached JWS/);
    const none = Buffer.from(JSON.stringify({ alg: "none", kid: "abcdef" })).toString("base64url");
    expect(jwsProblem(`${none}..`, GO_CONTENT, GO_TOKEN)).toMatch(/algorithm is none/);
  });
});

describe("tokens and pins as written on a join line", () => {
  it("parses ID.SECRET and refuses anything else", () => {
    expect(parseToken(" abcdef.0123456789abcdef\n")).toEqual(GO_TOKEN);
    for (const bad of ["ABCDEF.0123456789abcdef", "abcde.0123456789abcdef", "abcdef.0123456789abcde", "abcdef0123456789abcdef", ""])
      expect(parseToken(bad)).toBeNull();
  });
  it("parses sha256:HEX (any case) and refuses other forms", () => {
    const hex = "ab".repeat(32);
    expect(parseCaHash(`SHA256:${hex.toUpperCase()}`)).toBe(`sha256:${hex}`);
    expect(parseCaHash(hex)).toBeNull();
    expect(parseCaHash(`sha1:${hex}`)).toBeNull();
    expect(parseCaHash(`sha256:${hex.slice(2)}`)).toBeNull();
  });
  it("pins a CA as kubeadm's documented openssl pipeline does", () => {
    const ca = makeTestCa();
    const want = execSync(`openssl x509 -pubkey -noout -in ${join(ca.dir, "ca.crt")} | openssl pkey -pubin -outform der | sha256sum`, {
      encoding: "utf8",
    }).split(" ")[0];
    expect(caHashOf(readFileSync(join(ca.dir, "ca.crt"), "utf8"))).toBe(`sha256:${want}`);
  });
});

describe("trustedCa: kubeadm's token discovery in one rule", () => {
  const ca = makeTestCa();
  const kubeconfig = clusterInfoKubeconfig("https://192.0.2.10:6443", ca.caCert);
  const pin = caHashOf(ca.caCert);
  const sig = detachedSignature(kubeconfig, GO_TOKEN);
  it("reads the server and the CA back from cluster-info's kubeconfig", () => {
    expect(clusterOfKubeconfig(kubeconfig)).toEqual({ server: "https://192.0.2.10:6443", caPem: ca.caCert });
    expect(clusterOfKubeconfig("clusters: [")).toBeNull();
  });
  it("gives the CA only when the pin and the signature both hold", () => {
    expect(trustedCa(kubeconfig, sig, pin, GO_TOKEN)).toBe(ca.caCert);
    expect(trustedCa(kubeconfig, sig, `sha256:${"0".repeat(64)}`, GO_TOKEN)).toBeNull();
    expect(trustedCa(kubeconfig, null, pin, GO_TOKEN)).toBeNull();
    expect(trustedCa(kubeconfig, sig, pin, { ...GO_TOKEN, secret: "x".repeat(16) })).toBeNull();
    expect(trustedCa(null, sig, pin, GO_TOKEN)).toBeNull();
  });
});
