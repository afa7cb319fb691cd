// The NetworkPolicy enforcer's loop (cli/agents/network-policy.ts) against the loopback fixture API
// server (kube-api-fixture.ts: a TEST FIXTURE serving real-shaped pods, Namespaces and
// NetworkPolicies, not a Kubernetes) and the real iptables of a test user's own network namespace
// (unshare -rn; every command entered with nsenter, as the unit runs inside the node's namespaces).
// Checked: once the three lists are read, the filter table has the hooks and a chain for each
// isolated pod of this node only; a new policy and a deleted one change the rules within the
// loop's debounce; a part of a policy the enforcer cannot express (a protocol the API server's
// validation would refuse, served by the fixture) gets a Warning Event on the policy and a line in
// the state file `status` reads; the state file says what is enforced.
import type { ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type NetworkPolicyState, runNetworkPolicyAgent } from "../../../cli/agents/network-policy";
import type { LoopTiming } from "../../../cli/clients/informer";
import { apiClient, readKubeconfig } from "../../../cli/clients/kubernetes";
import { parseSavedFilter } from "../../../cli/plan/netpol-iptables";
import { type KubeApiFixture, kubeApiFixture } from "../../helpers/kube-api-fixture";
import { waitFor } from "../../helpers/process";
import { whichForUser } from "../../helpers/rootlesskit";
import { type TlsFixture, makeTlsFixture } from "../../helpers/tls-fixture";
import { testUser } from "../../helpers/user";

const TIMING: LoopTiming = { debounceMs: 100, resyncMs: 1000, retryMs: 200, watchSeconds: 30 };
const missing = ["unshare", "nsenter", "iptables-save", "iptables-restore"].filter((t) => !whichForUser(t));
const reason = missing.length ? `not installed: ${missing.join(", ")} (scripts/test-deps.sh installs them)` : null;
if (reason) console.log(`netpol-loop: skipped: ${reason}`);

describe.skipIf(reason !== null)(
  "the NetworkPolicy enforcer's loop, against the fixture API server and a namespace's real iptables",
  () => {
    const user = testUser("rk8s-np-loop", {});
    const work = user.newDir("rk8s-np-loop-");
    const stateFile = join(work, "netpol-state.json");
    let holder: ChildProcess;
    let tls: TlsFixture;
    let api: KubeApiFixture;
    let loop: { ac: AbortController; done: Promise<void> } | null = null;
    const log: string[] = [];

    const inNs = (argv: string[], input?: string) =>
      user.run(whichForUser("nsenter")!, ["-U", "-n", "--preserve-credentials", "-t", String(holder.pid), ...argv], {}, input);
    const saved = () => inNs([whichForUser("iptables-save")!, "-t", "filter"]).stdout;
    const state = (): NetworkPolicyState | null => {
      try {
        return JSON.parse(readFileSync(stateFile, "utf8")) as NetworkPolicyState;
      } catch {
        return null;
      }
    };
    const pod = (ns: string, name: string, ip: string, node: string, labels: Record<string, string>) => ({
      metadata: { namespace: ns, name, labels },
      spec: { nodeName: node, containers: [{ ports: [{ name: "http", containerPort: 8080 }] }] },
      status: { phase: "Running", podIP: ip },
    });

    beforeAll(async () => {
      holder = user.spawn(whichForUser("unshare")!, ["-rn", "--", "sleep", "600"], {}, { detached: true });
      await waitFor(() => inNs(["true"]).status === 0, 10_000, "the namespace holder");
      tls = makeTlsFixture();
      api = await kubeApiFixture(tls);
      api.put("namespaces", { metadata: { name: "shop", labels: { "kubernetes.io/metadata.name": "shop" } } });
      api.put("pods", pod("shop", "web", "10.244.0.5", "n1", { app: "web" }));
      api.put("pods", pod("shop", "client", "10.244.1.6", "n2", { app: "client" }));
      api.put("networkpolicies", {
        metadata: { namespace: "shop", name: "web-in" },
        spec: {
          podSelector: { matchLabels: { app: "web" } },
          policyTypes: ["Ingress"],
          ingress: [{ from: [{ podSelector: { matchLabels: { app: "client" } } }], ports: [{ port: "http" }] }],
        },
      });
      const ac = new AbortController();
      const done = runNetworkPolicyAgent(
        { kubeconfig: "", nodeName: "n1", stateFile, backend: "iptables" },
        {
          api: apiClient(await readKubeconfig(tls.kubeconfig(api.url))),
          run: async (argv, input) => {
            const r = inNs([whichForUser(argv[0]!) ?? argv[0]!, ...argv.slice(1)], input);
            return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
          },
          readText: async (f) => {
            const r = inNs(["cat", f]);
            return r.status === 0 ? r.stdout : null;
          },
          writeText: async () => {
            throw new Error("not expected: a new namespace has bridge-nf-call-iptables 1");
          },
          writeState: async (f, t) => writeFileSync(f, t),
          log: (l) => log.push(l),
        },
        ac.signal,
        TIMING,
      );
      loop = { ac, done };
    }, 30_000);

    afterAll(async () => {
      loop?.ac.abort();
      await loop?.done.catch(() => {});
      await api?.close();
      if (holder?.pid) process.kill(-holder.pid, "SIGKILL");
    });

    it("puts the hooks first and one chain for this node's isolated pod, letting in the peer on the named port", async () => {
      await waitFor(
        () => state()?.policies === 1,
        15_000,
        () => `the state file (log: ${log.join(" | ")})`,
      );
      const text = saved();
      expect(text).toMatch(/^-A FORWARD -j RK8S-NETPOL$/m);
      expect(text).toMatch(/^-A INPUT -j RK8S-NETPOL$/m);
      expect(parseSavedFilter(text).chains).toHaveLength(2);
      expect(text).toMatch(/^-A RK8S-NP-I-[0-9a-f]{12} -s 10\.244\.1\.6\/32 -p tcp -m tcp --dport 8080 -j RETURN$/m);
      expect(state()).toMatchObject({ enforced: true, why: null, policies: 1, isolated: { ingress: 1, egress: 0 }, problems: [] });
    });

    it("a new policy and a deleted one change the rules", async () => {
      api.put("networkpolicies", { metadata: { namespace: "shop", name: "deny-out" }, spec: { podSelector: {}, policyTypes: ["Egress"] } });
      await waitFor(() => state()?.isolated.egress === 1, 10_000, "egress isolation");
      expect(parseSavedFilter(saved()).chains).toHaveLength(3);
      api.remove("networkpolicies", "shop", "deny-out");
      await waitFor(() => state()?.isolated.egress === 0, 10_000, "egress isolation gone");
      expect(parseSavedFilter(saved()).chains).toHaveLength(2);
    });

    it("a part it cannot express: a Warning Event on the policy and a problem in the state, the rest enforced", async () => {
      api.put("networkpolicies", {
        metadata: { namespace: "shop", name: "odd" },
        spec: {
          podSelector: { matchLabels: { app: "web" } },
          policyTypes: ["Ingress"],
          ingress: [{ ports: [{ protocol: "ICMP", port: 1 }] }],
        },
      });
      await waitFor(() => (state()?.problems.length ?? 0) > 0, 10_000, "the problem");
      expect(state()?.problems).toEqual([
        { policy: "shop/odd", message: "protocol ICMP is not TCP, UDP or SCTP: the rule's port matches nothing" },
      ]);
      await waitFor(() => api.events.length > 0, 10_000, "the Event");
      expect(api.events[0]).toMatchObject({
        reason: "PolicyNotFullyEnforced",
        type: "Warning",
        involvedObject: { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", namespace: "shop", name: "odd" },
        source: { component: "rootless-k8s-netpol", host: "n1" },
      });
      // One Event while the problem lasts, not one per pass.
      await new Promise((r) => setTimeout(r, 2500));
      expect(api.events).toHaveLength(1);
      expect(saved()).toMatch(/-s 10\.244\.1\.6\/32 -p tcp -m tcp --dport 8080 -j RETURN/);
    });
  },
);
