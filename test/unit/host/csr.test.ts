// Reading a CertificateSigningRequest's spec.request: real requests made in the test (with
// @peculiar/x509, and with the openssl CLI as a second, independent maker), read back into subject
// and names; a broken self-signature, another PEM type, two blocks and junk give null; IP addresses
// come out in Go's form, the form a Node's addresses have.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { canonicalIp, parseCertificateRequestPem, parseCsrRequest } from "../../../cli/host/parse/csr";
import { kubeletRequest, requestPem } from "../../helpers/csr";
import { tempDir } from "../../helpers/temp";

const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("parseCsrRequest", () => {
  it("reads the kubelet's request: subject, the node's name and IP, and a valid self-signature", async () => {
    const pem = await kubeletRequest("w1", ["10.0.0.11"]);
    expect(pem).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----\n/);
    expect(await parseCsrRequest(b64(pem))).toEqual({
      commonName: "system:node:w1",
      organizations: ["system:nodes"],
      dnsNames: ["w1"],
      ipAddresses: ["10.0.0.11"],
      otherSans: [],
    });
  });

  it("reads an RSA request, and one with no SAN extension", async () => {
    const rsa = await parseCsrRequest(b64(await kubeletRequest("w2", ["10.0.0.12", "fd00::12"], { rsa: true })));
    expect(rsa).toMatchObject({ commonName: "system:node:w2", dnsNames: ["w2"], ipAddresses: ["10.0.0.12", "fd00::12"] });
    expect(await parseCsrRequest(b64(await requestPem({ cn: ["system:node:w1"] })))).toMatchObject({
      dnsNames: [],
      ipAddresses: [],
      otherSans: [],
    });
  });

  it("reports other name kinds, several CNs and Os as they are, for the rule to refuse", async () => {
    const pem = await requestPem({
      cn: ["system:node:w1", "system:node:w2"],
      o: ["system:nodes", "system:masters"],
      sans: [
        { type: "dns", value: "w1" },
        { type: "email", value: "root@w1" },
        { type: "url", value: "spiffe://cluster/w1" },
      ],
    });
    expect(await parseCsrRequest(b64(pem))).toEqual({
      commonName: "system:node:w1+system:node:w2",
      organizations: ["system:nodes", "system:masters"],
      dnsNames: ["w1"],
      ipAddresses: [],
      otherSans: ["email:root@w1", "url:spiffe://cluster/w1"],
    });
  });

  it("reads a request made by openssl (another maker than the one the tests use)", async () => {
    const dir = tempDir("rk8s-csr-");
    execFileSync(
      "openssl",
      [
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "w1.key",
        "-out",
        "w1.csr",
        "-subj",
        "/O=system:nodes/CN=system:node:w1",
        "-addext",
        "subjectAltName=DNS:w1,IP:10.0.0.11,IP:2001:db8:0:0:1:0:0:1",
      ],
      { cwd: dir, stdio: "pipe" },
    );
    const pem = readFileSync(join(dir, "w1.csr"), "utf8");
    expect(await parseCertificateRequestPem(pem)).toEqual({
      commonName: "system:node:w1",
      organizations: ["system:nodes"],
      dnsNames: ["w1"],
      ipAddresses: ["10.0.0.11", "2001:db8::1:0:0:1"],
      otherSans: [],
    });
    writeFileSync(join(dir, "w1.b64"), b64(pem));
    expect(await parseCsrRequest(readFileSync(join(dir, "w1.b64"), "utf8"))).not.toBeNull();
  });

  it("gives null for a request whose self-signature does not verify", async () => {
    const pem = await kubeletRequest("w1", ["10.0.0.11"]);
    const der = Buffer.from(pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
    // The last byte is the signature's (ECDSA's s): the request still parses, the signature is wrong.
    der[der.length - 1]! ^= 0x01;
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString("base64")}\n-----END CERTIFICATE REQUEST-----\n`;
    expect(await parseCertificateRequestPem(tampered)).toBeNull();
    // A subject changed after signing, the signature kept: wrong as well.
    const body = Buffer.from(pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
    const at = body.indexOf(Buffer.from("system:node:w1"));
    expect(at).toBeGreaterThan(0);
    body.write("system:node:w2", at);
    expect(
      await parseCertificateRequestPem(
        `-----BEGIN CERTIFICATE REQUEST-----\n${body.toString("base64")}\n-----END CERTIFICATE REQUEST-----\n`,
      ),
    ).toBeNull();
  });

  it("gives null for another PEM type, two blocks, junk and text that is not base64", async () => {
    const pem = await kubeletRequest("w1", ["10.0.0.11"]);
    expect(await parseCertificateRequestPem(pem.replaceAll("CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"))).toBeNull();
    expect(await parseCertificateRequestPem(pem.replaceAll("CERTIFICATE REQUEST", "CERTIFICATE"))).toBeNull();
    expect(await parseCertificateRequestPem(pem + pem)).toBeNull();
    expect(await parseCertificateRequestPem("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")).toBeNull();
    expect(await parseCertificateRequestPem("-----BEGIN CERTIFICATE REQUEST-----\n!!!\n-----END CERTIFICATE REQUEST-----\n")).toBeNull();
    expect(await parseCertificateRequestPem("")).toBeNull();
    expect(await parseCsrRequest("not base64 at all!")).toBeNull();
    expect(await parseCsrRequest(b64("hello"))).toBeNull();
    expect(await parseCsrRequest("")).toBeNull();
  });
});

describe("canonicalIp", () => {
  it("writes addresses as Go's net.IP.String() does", () => {
    expect(canonicalIp("10.0.0.11")).toBe("10.0.0.11");
    expect(canonicalIp("FD00:0000:0000:0000:0000:0000:0000:000B")).toBe("fd00::b");
    expect(canonicalIp("2001:db8:0:0:1:0:0:1")).toBe("2001:db8::1:0:0:1");
    expect(canonicalIp("2001:db8:0:1:1:1:1:1")).toBe("2001:db8:0:1:1:1:1:1");
    expect(canonicalIp("::")).toBe("::");
    expect(canonicalIp("::1")).toBe("::1");
    expect(canonicalIp("1::")).toBe("1::");
    expect(canonicalIp("::ffff:10.0.0.1")).toBe("10.0.0.1");
    expect(canonicalIp("::ffff:a00:1")).toBe("10.0.0.1");
    expect(canonicalIp("64:ff9b::10.0.0.1")).toBe("64:ff9b::a00:1");
  });

  it("is null for what is not one address", () => {
    for (const t of [
      "",
      "10.0.0",
      "10.0.0.256",
      "010.0.0.1",
      "10.0.0.0/8",
      "fe80::1%eth0",
      "1:2:3:4:5:6:7:8:9",
      "1::2::3",
      "g::1",
      "w1",
      "1:2:3:4:5:6:7::8",
    ])
      expect(canonicalIp(t), t).toBeNull();
  });
});
