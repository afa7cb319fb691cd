// The PKI against the real openssl: every certificate verifies against its CA, with the SANs,
// key usages and subjects the components need; keys are what they claim; re-generation reuses.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildPlan } from "../../../cli/plan";
import type { Plan } from "../../../cli/plan/plan";
import { certSpecs, generatePki, type Pki } from "../../../cli/render/pki";
import { tempDir } from "../../helpers/temp";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

const dir = tempDir("rk8s-pki-");

function openssl(args: string[], input?: string): string {
  return execFileSync("openssl", args, { encoding: "utf8", input, stdio: ["pipe", "pipe", "pipe"] });
}

function save(name: string, content: string): string {
  const f = join(dir, name);
  writeFileSync(f, content);
  return f;
}

/** `openssl x509 -text` of a certificate, for SAN / usage assertions. */
function text(pem: string): string {
  return openssl(["x509", "-noout", "-text"], pem);
}

for (const algorithm of ["ecdsa-p256", "rsa-2048"] as const) {
  describe(`PKI (${algorithm})`, () => {
    let plan: Plan;
    let pki: Pki;
    beforeAll(async () => {
      plan = buildPlan(baseFacts(), { pkiAlgorithm: algorithm }, upstreamVersions());
      pki = await generatePki(plan);
    }, 60_000);

    it("has three self-signed CAs (cluster, etcd, front proxy) that are CAs and sign nothing else", () => {
      for (const ca of [pki.ca, pki.etcdCa, pki.frontProxyCa]) {
        const t = text(ca.cert);
        expect(t).toMatch(/CA:TRUE/);
        expect(t).toMatch(/Certificate Sign, CRL Sign/);
        const f = save(`ca-${Math.random()}.crt`, ca.cert);
        expect(openssl(["verify", "-CAfile", f, f]).trim()).toBe(`${f}: OK`);
      }
    });

    it("every certificate verifies against its CA (openssl verify) with the right purpose", () => {
      const caFile = {
        ca: save(`${algorithm}-ca.crt`, pki.ca.cert),
        etcdCa: save(`${algorithm}-etcd-ca.crt`, pki.etcdCa.cert),
        frontProxyCa: save(`${algorithm}-front-proxy-ca.crt`, pki.frontProxyCa.cert),
      };
      for (const spec of certSpecs(plan)) {
        const f = save(`${algorithm}-${spec.file}.crt`, pki[spec.name]!.cert);
        for (const usage of spec.usages) {
          const purpose = usage === "server" ? "sslserver" : "sslclient";
          expect(openssl(["verify", "-purpose", purpose, "-CAfile", caFile[spec.issuer], f]).trim(), spec.name).toBe(`${f}: OK`);
        }
        // and not against the other CAs
        for (const [name, other] of Object.entries(caFile).filter(([n]) => n !== spec.issuer))
          expect(() => openssl(["verify", "-CAfile", other, f]), `${spec.name} must not verify against ${name}`).toThrow();
        const t = text(pki[spec.name]!.cert);
        expect(t).toMatch(/CA:FALSE/);
        expect(t).toMatch(/Digital Signature/);
        if (algorithm === "rsa-2048") expect(t).toMatch(/Key Encipherment/);
        expect(t).toContain(algorithm === "rsa-2048" ? "Public-Key: (2048 bit)" : "ASN1 OID: prime256v1");
        expect(t).toMatch(spec.usages.includes("server") ? /TLS Web Server Authentication/ : /TLS Web Client Authentication/);
      }
    });

    it("gives the API server the SANs clients use", () => {
      const t = text(pki.apiServer.cert);
      for (const dns of ["localhost", "kubernetes", "kubernetes.default.svc.cluster.local", "devbox"]) expect(t).toContain(`DNS:${dns}`);
      for (const ip of ["127.0.0.1", plan.cidrs.firstServiceIP, plan.network.namespaceIP, "192.168.1.20"])
        expect(t).toContain(`IP Address:${ip}`);
      expect(t).toMatch(/Subject: CN ?= ?kube-apiserver/);
    });

    it("names the node and the admins as the API server's authorizers expect", () => {
      expect(text(pki.kubeletClient.cert)).toMatch(/Subject: O ?= ?system:nodes, CN ?= ?system:node:devbox/);
      expect(text(pki.admin.cert)).toMatch(/Subject: O ?= ?system:masters, CN ?= ?rootless-k8s-admin/);
      expect(text(pki.controllerManager.cert)).toMatch(/CN ?= ?system:kube-controller-manager/);
      expect(text(pki.scheduler.cert)).toMatch(/CN ?= ?system:kube-scheduler/);
      expect(text(pki.kubeProxy.cert)).toMatch(/CN ?= ?system:kube-proxy/);
      expect(text(pki.etcdServer.cert)).toMatch(/IP Address:127\.0\.0\.1/);
      // the aggregation layer: the API server's --requestheader-allowed-names is this CN
      expect(text(pki.frontProxyClient.cert)).toMatch(/Subject: CN ?= ?front-proxy-client/);
      expect(text(pki.frontProxyClient.cert)).toMatch(/Issuer: CN ?= ?rootless-k8s-front-proxy-ca/);
    });

    it("pairs each key with its certificate, and the service-account keys with each other", () => {
      for (const spec of certSpecs(plan)) {
        const fromCert = openssl(["x509", "-noout", "-pubkey"], pki[spec.name]!.cert);
        const fromKey = openssl(["pkey", "-pubout"], pki[spec.name]!.key);
        expect(fromKey, spec.name).toBe(fromCert);
      }
      expect(openssl(["pkey", "-pubout"], pki.serviceAccount.privateKey)).toBe(pki.serviceAccount.publicKey);
    });

    it("reuses everything that still fits, and renews what does not", async () => {
      const again = await generatePki(plan, { existing: pki });
      expect(again).toEqual(pki);
      // A new host address: only the API server certificate changes.
      const moved = { ...plan, pki: { ...plan.pki, hostAddresses: ["192.168.1.99"] } };
      const renewed = await generatePki(moved, { existing: pki });
      expect(renewed.ca).toEqual(pki.ca);
      expect(renewed.admin).toEqual(pki.admin);
      expect(renewed.apiServer.cert).not.toBe(pki.apiServer.cert);
      expect(text(renewed.apiServer.cert)).toContain("IP Address:192.168.1.99");
      // A damaged CA key: a new CA and new leaves (never a leaf signed by a CA we cannot use).
      const broken = await generatePki(plan, { existing: { ...pki, ca: { cert: pki.ca.cert, key: pki.etcdCa.key } } });
      expect(broken.ca.cert).not.toBe(pki.ca.cert);
      expect(broken.admin.cert).not.toBe(pki.admin.cert);
      expect(broken.etcdCa).toEqual(pki.etcdCa);
      expect(broken.frontProxyClient).toEqual(pki.frontProxyClient);
      // A PKI from before the front-proxy CA (an older install): the CA and its client are added, the rest kept.
      const { frontProxyCa: _ca, frontProxyClient: _client, ...older } = pki;
      const upgraded = await generatePki(plan, { existing: older });
      expect(upgraded.ca).toEqual(pki.ca);
      expect(upgraded.admin).toEqual(pki.admin);
      expect(text(upgraded.frontProxyClient.cert)).toMatch(/CN ?= ?front-proxy-client/);
      // Certificates about to expire are renewed.
      const later = await generatePki(plan, { existing: pki, now: new Date(Date.now() + 340 * 86_400_000) });
      expect(later.ca).toEqual(pki.ca);
      expect(later.admin.cert).not.toBe(pki.admin.cert);
    }, 60_000);
  });
}

it("a switch of algorithm replaces the whole PKI", async () => {
  const facts = baseFacts();
  const ec = await generatePki(buildPlan(facts, {}, upstreamVersions()));
  const rsa = await generatePki(buildPlan(facts, { pkiAlgorithm: "rsa-2048" }, upstreamVersions()), { existing: ec });
  expect(rsa.ca.cert).not.toBe(ec.ca.cert);
  expect(rsa.serviceAccount.privateKey).not.toBe(ec.serviceAccount.privateKey);
  expect(text(rsa.ca.cert)).toContain("Public-Key: (2048 bit)");
}, 60_000);
