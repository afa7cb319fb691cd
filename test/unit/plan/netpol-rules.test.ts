// NetworkPolicy → iptables rules (cli/plan/netpol-rules.ts), pure: selectors, policy types, peers by
// pod, namespace and ipBlock (except), ports by number, range and name, and the restore transaction
// with its hooks. The objects are shaped as the API server returns them (policyTypes filled in,
// the namespace label kubernetes.io/metadata.name), from the examples of
// https://kubernetes.io/docs/concepts/services-networking/network-policies/.
import { describe, expect, it } from "vitest";
import { subtractCidrs, parseCidr, formatCidr } from "../../../cli/plan/cidr";
import { iptablesChains, parseSavedFilter, removalText, restoreText } from "../../../cli/plan/netpol-iptables";
import { nftRemovalText, nftText } from "../../../cli/plan/netpol-nftables";
import {
  type CompiledRules,
  type NetworkPolicyObject,
  type PodObject,
  compileNetworkPolicies,
  selects,
} from "../../../cli/plan/netpol-rules";

const pod = (
  ns: string,
  name: string,
  ip: string,
  labels: Record<string, string>,
  node = "n1",
  ports: PodObject["spec"] = undefined,
): PodObject => ({
  metadata: { namespace: ns, name, uid: `uid-${name}`, labels },
  spec: { nodeName: node, containers: [{ ports: [] }], ...(ports ?? {}) },
  status: { phase: "Running", podIP: ip },
});
const ns = (name: string, labels: Record<string, string> = {}) => ({
  metadata: { name, labels: { "kubernetes.io/metadata.name": name, ...labels } },
});
const policy = (namespace: string, name: string, spec: NetworkPolicyObject["spec"]): NetworkPolicyObject => ({
  metadata: { namespace, name },
  spec,
});

const web = pod("shop", "web", "10.244.0.5", { app: "web" }, "n1", {
  nodeName: "n1",
  containers: [
    {
      ports: [
        { name: "http", containerPort: 8080 },
        { name: "dns", containerPort: 53, protocol: "UDP" },
      ],
    },
  ],
});
const client = pod("shop", "client", "10.244.0.6", { app: "client" });
const remote = pod("other", "far", "10.244.1.7", { app: "client" }, "n2");
/** The iptables back end's per-pod chains, and its entry chain's rules. */
const pods = (c: CompiledRules) => new Map([...iptablesChains(c)].filter(([k]) => k !== "RK8S-NETPOL"));
const entry = (c: CompiledRules) => iptablesChains(c).get("RK8S-NETPOL")!;
const base = { nodeName: "n1", pods: [web, client, remote], namespaces: [ns("shop"), ns("other", { team: "a" })] };

describe("label selectors", () => {
  it("follow Kubernetes: {} selects all, matchLabels all equal, In, NotIn, Exists, DoesNotExist", () => {
    const l = { app: "web", tier: "front" };
    expect(selects({}, l)).toBe(true);
    expect(selects({ matchLabels: { app: "web" } }, l)).toBe(true);
    expect(selects({ matchLabels: { app: "web", tier: "back" } }, l)).toBe(false);
    expect(selects({ matchExpressions: [{ key: "tier", operator: "In", values: ["front", "x"] }] }, l)).toBe(true);
    expect(selects({ matchExpressions: [{ key: "tier", operator: "NotIn", values: ["front"] }] }, l)).toBe(false);
    expect(selects({ matchExpressions: [{ key: "gone", operator: "NotIn", values: ["front"] }] }, l)).toBe(true);
    expect(selects({ matchExpressions: [{ key: "app", operator: "Exists" }] }, l)).toBe(true);
    expect(selects({ matchExpressions: [{ key: "app", operator: "DoesNotExist" }] }, l)).toBe(false);
    expect(selects({ matchExpressions: [{ key: "app", operator: "Gt", values: ["1"] }] }, l)).toBe(false);
  });
});

describe("an ipBlock's cidr less its except list", () => {
  it("is the fewest networks that cover exactly the rest", () => {
    const f = (c: string, e: string[]) =>
      subtractCidrs(
        parseCidr(c)!,
        e.map((x) => parseCidr(x)!),
      ).map(formatCidr);
    expect(f("10.0.0.0/24", ["10.0.0.0/26"])).toEqual(["10.0.0.64/26", "10.0.0.128/25"]);
    expect(f("172.17.0.0/16", ["172.17.1.0/24"])).toHaveLength(8);
    expect(f("10.0.0.0/24", ["192.168.0.0/16"])).toEqual(["10.0.0.0/24"]);
    expect(f("10.0.0.0/24", ["10.0.0.0/8"])).toEqual([]);
  });
});

describe("compiling policies for one node's pods", () => {
  it("isolates nothing without policies: only the conntrack rule", () => {
    const c = compileNetworkPolicies({ ...base, policies: [] });
    expect(pods(c).size).toBe(0);
    expect(entry(c)).toEqual(["-A RK8S-NETPOL -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN"]);
  });

  it("default-deny ingress: every local pod of the namespace gets a chain that drops, and egress stays open", () => {
    const c = compileNetworkPolicies({ ...base, policies: [policy("shop", "deny", { podSelector: {}, policyTypes: ["Ingress"] })] });
    expect(c.counts).toEqual({ ingress: 2, egress: 0 });
    for (const body of pods(c).values()) expect(body).toEqual([expect.stringMatching(/-j DROP$/)]);
    expect(entry(c).filter((l) => l.includes("-d 10.244.0.5/32"))).toHaveLength(1);
    // The remote pod is another node's to enforce.
    expect(entry(c).join("\n")).not.toContain("10.244.1.7");
  });

  it("an allow rule by pod label and named port: the peer's address and the port the pod names", () => {
    const c = compileNetworkPolicies({
      ...base,
      policies: [
        policy("shop", "web", {
          podSelector: { matchLabels: { app: "web" } },
          policyTypes: ["Ingress"],
          ingress: [
            { from: [{ podSelector: { matchLabels: { app: "client" } } }], ports: [{ port: "http" }, { protocol: "UDP", port: "dns" }] },
          ],
        }),
      ],
    });
    const [body] = [...pods(c).values()];
    expect(body).toEqual([
      expect.stringMatching(/ -s 10\.244\.0\.6\/32 -p tcp -m tcp --dport 8080 -j RETURN$/),
      expect.stringMatching(/ -s 10\.244\.0\.6\/32 -p udp -m udp --dport 53 -j RETURN$/),
      expect.stringMatching(/-j DROP$/),
    ]);
  });

  it("a namespace selector takes every pod of the matching namespaces, on any node; with a pod selector, only those", () => {
    const rule = (peer: object) =>
      compileNetworkPolicies({
        ...base,
        policies: [
          policy("shop", "p", { podSelector: { matchLabels: { app: "web" } }, policyTypes: ["Ingress"], ingress: [{ from: [peer] }] }),
        ],
      });
    const all = [...pods(rule({ namespaceSelector: { matchLabels: { team: "a" } } })).values()][0]!;
    expect(all.some((l) => l.includes("-s 10.244.1.7/32"))).toBe(true);
    const none = [
      ...pods(rule({ namespaceSelector: { matchLabels: { team: "a" } }, podSelector: { matchLabels: { app: "web" } } })).values(),
    ][0]!;
    expect(none).toEqual([expect.stringMatching(/-j DROP$/)]);
  });

  it("egress: destinations, a port range (endPort) and an ipBlock less its except", () => {
    const c = compileNetworkPolicies({
      ...base,
      policies: [
        policy("shop", "out", {
          podSelector: { matchLabels: { app: "client" } },
          policyTypes: ["Egress"],
          egress: [
            {
              to: [{ ipBlock: { cidr: "10.0.0.0/24", except: ["10.0.0.0/25"] } }],
              ports: [{ protocol: "TCP", port: 8000, endPort: 8100 }],
            },
          ],
        }),
      ],
    });
    expect(c.counts).toEqual({ ingress: 0, egress: 1 });
    expect([...pods(c).values()][0]).toEqual([
      expect.stringMatching(/ -d 10\.0\.0\.128\/25 -p tcp -m tcp --dport 8000:8100 -j RETURN$/),
      expect.stringMatching(/-j DROP$/),
    ]);
    expect(entry(c)[1]).toMatch(/^-A RK8S-NETPOL -s 10\.244\.0\.6\/32 .* -j RK8S-NP-E-[0-9a-f]{12}$/);
  });

  it("an empty rule allows everything; a rule whose named port no pod has allows nothing; SCTP and bad protocols", () => {
    const c = compileNetworkPolicies({
      ...base,
      policies: [
        policy("shop", "open", { podSelector: { matchLabels: { app: "web" } }, policyTypes: ["Ingress"], ingress: [{}] }),
        policy("shop", "odd", {
          podSelector: { matchLabels: { app: "client" } },
          policyTypes: ["Ingress"],
          ingress: [{ ports: [{ port: "nope" }, { protocol: "ICMP", port: 1 }] }],
        }),
      ],
    });
    const bodies = [...pods(c).values()];
    expect(bodies).toContainEqual([expect.stringMatching(/^-A RK8S-NP-I-\w+ -j RETURN$/), expect.stringMatching(/-j DROP$/)]);
    expect(bodies).toContainEqual([expect.stringMatching(/-j DROP$/)]);
    expect(c.problems).toEqual([{ policy: "shop/odd", message: "protocol ICMP is not TCP, UDP or SCTP: the rule's port matches nothing" }]);
  });

  it("denyOnly keeps isolation and drops every allow (fail closed)", () => {
    const c = compileNetworkPolicies(
      { ...base, policies: [policy("shop", "open", { podSelector: {}, policyTypes: ["Ingress", "Egress"], ingress: [{}], egress: [{}] })] },
      { denyOnly: true },
    );
    expect(c.counts).toEqual({ ingress: 2, egress: 2 });
    for (const body of pods(c).values()) expect(body).toEqual([expect.stringMatching(/-j DROP$/)]);
  });

  it("skips pods that ended, have no address yet, or use the host's network", () => {
    const ended = { ...pod("shop", "done", "10.244.0.9", { app: "web" }), status: { phase: "Succeeded", podIP: "10.244.0.9" } };
    const host = { ...pod("shop", "h", "10.0.2.100", { app: "web" }), spec: { nodeName: "n1", hostNetwork: true } };
    const pending = { ...pod("shop", "p", "", { app: "web" }), status: { phase: "Pending" } };
    const c = compileNetworkPolicies({
      ...base,
      pods: [ended, host, pending],
      policies: [policy("shop", "deny", { podSelector: {}, policyTypes: ["Ingress"] })],
    });
    expect(c.counts.ingress).toBe(0);
  });
});

describe("the restore transaction", () => {
  const compiled = compileNetworkPolicies({ ...base, policies: [policy("shop", "deny", { podSelector: {}, policyTypes: ["Ingress"] })] });

  it("on an empty table: declares the chains and puts the three hooks first", () => {
    const text = restoreText(compiled, parseSavedFilter("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\nCOMMIT\n"));
    expect(text).toContain("-I FORWARD 1 -j RK8S-NETPOL\n");
    expect(text).toContain("-I INPUT 1 -j RK8S-NETPOL\n");
    expect(text).toContain("-I OUTPUT 1 -m addrtype ! --src-type LOCAL -j RK8S-NETPOL\n");
    expect(text.startsWith("*filter\n:RK8S-NETPOL - [0:0]\n")).toBe(true);
    expect(text.endsWith("COMMIT\n")).toBe(true);
  });

  it("leaves hooks that are first alone, moves one kube-proxy put behind its own, and deletes the chains of pods gone", () => {
    const saved = [
      "*filter",
      ":FORWARD ACCEPT [0:0]",
      ":RK8S-NETPOL - [0:0]",
      ":RK8S-NP-I-000000000000 - [0:0]",
      "-A INPUT -j RK8S-NETPOL",
      '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
      "-A FORWARD -j RK8S-NETPOL",
      "-A OUTPUT -m addrtype ! --src-type LOCAL -j RK8S-NETPOL",
      "COMMIT",
    ].join("\n");
    const text = restoreText(compiled, parseSavedFilter(saved));
    expect(text).not.toContain("INPUT 1");
    expect(text).not.toContain("OUTPUT 1");
    expect(text).toContain("-D FORWARD -j RK8S-NETPOL\n-I FORWARD 1 -j RK8S-NETPOL\n");
    expect(text).toContain(":RK8S-NP-I-000000000000 - [0:0]\n");
    expect(text).toContain("-X RK8S-NP-I-000000000000\n");
    expect(removalText(parseSavedFilter(saved))).toContain("-D FORWARD -j RK8S-NETPOL\n");
  });
});

describe("the nftables back end", () => {
  const c = compileNetworkPolicies({
    ...base,
    policies: [
      policy("shop", "web", {
        podSelector: { matchLabels: { app: "web" } },
        policyTypes: ["Ingress", "Egress"],
        ingress: [
          {
            from: [{ podSelector: { matchLabels: { app: "client" } } }],
            ports: [{ port: "http" }, { protocol: "UDP", port: 5000, endPort: 5010 }],
          },
        ],
        egress: [{ ports: [{ protocol: "SCTP" }] }],
      }),
    ],
  });
  const text = nftText(c);

  it("replaces one table of its own in one transaction, made first so that the delete never fails", () => {
    expect(text.startsWith("add table ip rootless_k8s_netpol\ndelete table ip rootless_k8s_netpol\ntable ip rootless_k8s_netpol {\n")).toBe(
      true,
    );
    expect(nftRemovalText()).toBe("add table ip rootless_k8s_netpol\ndelete table ip rootless_k8s_netpol\n");
  });

  it("writes the same allows as the iptables back end: peers, named ports, ranges, a protocol alone", () => {
    expect(text).toContain("    ip saddr 10.244.0.6/32 tcp dport 8080 return\n");
    expect(text).toContain("    ip saddr 10.244.0.6/32 udp dport 5000-5010 return\n");
    expect(text).toContain("    meta l4proto sctp return\n");
    expect(text).toMatch(/ip daddr 10\.244\.0\.5 jump i_[0-9a-f]{12} comment "shop\/web ingress"/);
    expect(text).toMatch(/ip saddr 10\.244\.0\.5 jump e_[0-9a-f]{12} comment "shop\/web egress"/);
  });

  it("hooks forward and input, and output only for sources that are not the node's", () => {
    expect(text).toContain("  chain forward {\n    type filter hook forward priority filter - 10; policy accept;\n    jump netpol\n  }");
    expect(text).toContain(
      "  chain output {\n    type filter hook output priority filter - 10; policy accept;\n    fib saddr type != local jump netpol\n  }",
    );
  });
});

describe("egress on a named port to every address (upstream's 'should allow egress access on one named port')", () => {
  it("lets the pod reach each pod that names the port, on that pod's number, and no address that is no pod", () => {
    const other = pod("other", "dns", "10.244.1.9", { app: "dns" }, "n2", {
      nodeName: "n2",
      containers: [{ ports: [{ name: "http", containerPort: 9000 }] }],
    });
    const c = compileNetworkPolicies({
      ...base,
      pods: [...base.pods, other],
      policies: [
        policy("shop", "out", {
          podSelector: { matchLabels: { app: "client" } },
          policyTypes: ["Egress"],
          egress: [{ ports: [{ port: "http" }] }],
        }),
      ],
    });
    expect([...pods(c).values()][0]).toEqual([
      expect.stringMatching(/ -d 10\.244\.0\.5\/32 -p tcp -m tcp --dport 8080 -j RETURN$/),
      expect.stringMatching(/ -d 10\.244\.1\.9\/32 -p tcp -m tcp --dport 9000 -j RETURN$/),
      expect.stringMatching(/-j DROP$/),
    ]);
  });
});
