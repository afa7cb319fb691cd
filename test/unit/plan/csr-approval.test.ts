// The kubelet serving-certificate approval rule (pure): a request exactly as a worker's kubelet
// makes it is approved, and each condition, broken alone, leaves it pending with a sentence that
// names what did not match; each condition is also shown passing in its other allowed forms.
import { describe, expect, it } from "vitest";
import type { ParsedRequest } from "../../../cli/host/parse/csr";
import {
  type CsrCondition,
  type CsrObject,
  csrState,
  decideServingCsr,
  type NodeObject,
  servingCsrNodeName,
} from "../../../cli/plan/csr-approval";

function csr(o: { spec?: Partial<CsrObject["spec"]>; conditions?: CsrCondition[] } = {}): CsrObject {
  return {
    metadata: { name: "csr-abc" },
    spec: {
      request: "",
      signerName: "kubernetes.io/kubelet-serving",
      usages: ["digital signature", "server auth"],
      username: "system:node:w1",
      groups: ["system:nodes", "system:authenticated"],
      ...o.spec,
    },
    status: o.conditions ? { conditions: o.conditions } : {},
  };
}

function parsed(o: Partial<ParsedRequest> = {}): ParsedRequest {
  return {
    commonName: "system:node:w1",
    organizations: ["system:nodes"],
    dnsNames: ["w1"],
    ipAddresses: ["10.0.0.11"],
    otherSans: [],
    ...o,
  };
}

function node(
  addresses = [
    { type: "InternalIP", address: "10.0.0.11" },
    { type: "ExternalIP", address: "203.0.113.7" },
    { type: "Hostname", address: "w1.lan" },
    { type: "InternalDNS", address: "w1.internal" },
  ],
): NodeObject {
  return { metadata: { name: "w1" }, status: { addresses } };
}

const refused = (d: ReturnType<typeof decideServingCsr>) => {
  expect(d.approve).toBe(false);
  // One plain sentence: no line break, no trailing period needed, something said.
  expect(d.reason).not.toMatch(/\n/);
  return d.reason;
};

describe("decideServingCsr", () => {
  it("approves the request a kubelet makes for itself, saying which names it covers", () => {
    const d = decideServingCsr(csr(), parsed(), node());
    expect(d).toEqual({
      approve: true,
      reason: "it is node w1's own serving certificate request and every name it asks for (w1, 10.0.0.11) is that node's",
    });
  });

  it("leaves one already approved, denied or failed alone", () => {
    for (const [type, state] of [
      ["Approved", "approved"],
      ["Denied", "denied"],
      ["Failed", "failed"],
    ] as const) {
      const c = csr({ conditions: [{ type, status: "True", reason: "X" }] });
      expect(csrState(c)).toBe(state);
      expect(refused(decideServingCsr(c, parsed(), node()))).toBe(`it is already ${state}`);
    }
    expect(csrState(csr())).toBe("pending");
    // A condition with status False does not count (the API server writes True; be lenient in reading).
    expect(decideServingCsr(csr({ conditions: [{ type: "Approved", status: "False" }] }), parsed(), node()).approve).toBe(true);
  });

  it("needs the signer kubernetes.io/kubelet-serving", () => {
    const c = csr({ spec: { signerName: "kubernetes.io/kube-apiserver-client-kubelet" } });
    expect(refused(decideServingCsr(c, parsed(), node()))).toBe(
      "its signer is kubernetes.io/kube-apiserver-client-kubelet, not kubernetes.io/kubelet-serving",
    );
    expect(servingCsrNodeName(c)).toBeNull();
  });

  it("needs a node as requester (system:node:<a valid node name>), in system:nodes", () => {
    for (const username of [
      "alice",
      "system:node:",
      "system:node:W1",
      "system:node:w1/x",
      "system:serviceaccount:kube-system:w1",
      undefined,
    ]) {
      const c = csr({ spec: { username } });
      expect(servingCsrNodeName(c)).toBeNull();
      expect(refused(decideServingCsr(c, parsed(), node()))).toMatch(/^its requester ".*" is not a node \(system:node:<node name>\)$/);
    }
    expect(servingCsrNodeName(csr())).toBe("w1");
    expect(servingCsrNodeName(csr({ spec: { username: "system:node:w-1.example.org" } }))).toBe("w-1.example.org");
    expect(refused(decideServingCsr(csr({ spec: { groups: ["system:authenticated"] } }), parsed(), node()))).toBe(
      "its requester system:node:w1 is not in the group system:nodes (groups: system:authenticated)",
    );
    expect(refused(decideServingCsr(csr({ spec: { groups: undefined } }), parsed(), node()))).toMatch(/\(groups: none\)$/);
  });

  it("needs a readable, validly self-signed request", () => {
    expect(refused(decideServingCsr(csr(), null, node()))).toBe(
      "its request is not a readable PKCS#10 certificate request with a valid self-signature",
    );
  });

  it("needs the subject's CN to be the requester and its O exactly system:nodes", () => {
    expect(refused(decideServingCsr(csr(), parsed({ commonName: "system:node:w2" }), node()))).toBe(
      'its subject\'s common name "system:node:w2" is not its requester system:node:w1',
    );
    expect(refused(decideServingCsr(csr(), parsed({ commonName: "system:node:w1+system:node:w2" }), node()))).toMatch(/common name/);
    for (const organizations of [[], ["system:masters"], ["system:nodes", "system:masters"], ["system:masters", "system:nodes"]])
      expect(refused(decideServingCsr(csr(), parsed({ organizations }), node()))).toBe(
        `its subject's organizations are [${organizations.join(", ")}], not exactly [system:nodes]`,
      );
  });

  it("needs server auth and digital signature, allows key encipherment, and nothing else", () => {
    const withUsages = (usages: string[] | undefined) => decideServingCsr(csr({ spec: { usages } }), parsed(), node());
    expect(withUsages(["digital signature", "key encipherment", "server auth"]).approve).toBe(true);
    expect(withUsages(["server auth", "digital signature"]).approve).toBe(true);
    expect(refused(withUsages(["digital signature", "server auth", "client auth"]))).toBe(
      "it asks for the usages client auth, beyond digital signature, server auth, key encipherment",
    );
    expect(refused(withUsages(["digital signature", "key encipherment", "cert sign", "server auth"]))).toMatch(/the usages cert sign,/);
    expect(refused(withUsages(["digital signature", "key encipherment"]))).toBe(
      "its usages (digital signature, key encipherment) lack server auth",
    );
    expect(refused(withUsages(["server auth"]))).toBe("its usages (server auth) lack digital signature");
    expect(refused(withUsages(undefined))).toBe("its usages (none) lack digital signature and server auth");
  });

  it("refuses names other than DNS names and IP addresses, and needs at least one", () => {
    expect(refused(decideServingCsr(csr(), parsed({ otherSans: ["email:root@w1", "url:spiffe://x"] }), node()))).toBe(
      "it asks for names other than DNS names and IP addresses: email:root@w1, url:spiffe://x",
    );
    expect(refused(decideServingCsr(csr(), parsed({ dnsNames: [], ipAddresses: [] }), node()))).toBe(
      "it asks for no DNS name and no IP address",
    );
    // Either kind alone is enough.
    expect(decideServingCsr(csr(), parsed({ dnsNames: [] }), node()).approve).toBe(true);
    expect(decideServingCsr(csr(), parsed({ ipAddresses: [] }), node()).approve).toBe(true);
  });

  it("needs the Node to exist, and to be the one the requester names", () => {
    expect(refused(decideServingCsr(csr(), parsed(), null))).toBe("node w1 does not exist");
    expect(refused(decideServingCsr(csr(), parsed(), { ...node(), metadata: { name: "w2" } }))).toBe("the Node read is w2, not w1");
  });

  it("takes only IPs among the Node's InternalIP and ExternalIP addresses", () => {
    expect(decideServingCsr(csr(), parsed({ ipAddresses: ["10.0.0.11", "203.0.113.7"] }), node()).approve).toBe(true);
    expect(refused(decideServingCsr(csr(), parsed({ ipAddresses: ["10.0.0.11", "10.9.9.9"] }), node()))).toBe(
      "its IP address 10.9.9.9 is not among node w1's InternalIP and ExternalIP addresses (10.0.0.11, 203.0.113.7)",
    );
    expect(refused(decideServingCsr(csr(), parsed({ ipAddresses: ["10.9.9.9", "127.0.0.1"] }), node()))).toMatch(
      /^its IP addresses 10\.9\.9\.9, 127\.0\.0\.1 are not among/,
    );
    // An address of another type is not a serving IP, even when it looks like one.
    const odd = node([
      { type: "InternalIP", address: "10.0.0.11" },
      { type: "Hostname", address: "10.0.0.99" },
    ]);
    expect(refused(decideServingCsr(csr(), parsed({ ipAddresses: ["10.0.0.99"] }), odd))).toMatch(/10\.0\.0\.99 is not among/);
    expect(refused(decideServingCsr(csr(), parsed(), { metadata: { name: "w1" } }))).toBe(
      "its IP address 10.0.0.11 is not among node w1's InternalIP and ExternalIP addresses (none)",
    );
    // IPv6 compared as addresses, not as text.
    const v6 = node([{ type: "InternalIP", address: "FD00:0:0:0::0B" }]);
    expect(decideServingCsr(csr(), parsed({ ipAddresses: ["fd00::b"] }), v6).approve).toBe(true);
  });

  it("takes only DNS names that are the node's name or one of its Hostname addresses", () => {
    expect(decideServingCsr(csr(), parsed({ dnsNames: ["w1", "w1.lan"] }), node()).approve).toBe(true);
    expect(refused(decideServingCsr(csr(), parsed({ dnsNames: ["w1", "kubernetes.default.svc"] }), node()))).toBe(
      "its DNS name kubernetes.default.svc is neither node w1's name nor one of its Hostname addresses",
    );
    // InternalDNS is not among them, nor another node's name.
    expect(refused(decideServingCsr(csr(), parsed({ dnsNames: ["w1.internal", "w2"] }), node()))).toMatch(
      /^its DNS names w1\.internal, w2 are neither/,
    );
  });
});
