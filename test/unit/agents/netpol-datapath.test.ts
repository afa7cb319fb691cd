// NetworkPolicy rules on a real data path: a test user's own network namespace (unshare -rn, as the
// node's is RootlessKit's) with a bridge and two "pods" (network namespaces of their own, each on a
// veth of the bridge, as the CNI bridge plugin makes them), the kernel's br_netfilter and the
// host's iptables-restore. What cli/plan/netpol-rules.ts compiles for real-shaped policies is
// applied as the enforcer applies it (iptables-save, then one iptables-restore --noflush), and
// real TCP connections between the pods show what passes: nothing isolated, default-deny ingress,
// an allow by label and port, a peer whose labels do not match, default-deny egress on the client,
// and every policy removed (traffic restored and no chain of ours left).
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RuleWriter, ruleWriter } from "../../../cli/agents/network-policy";
import { parseSavedFilter } from "../../../cli/plan/netpol-iptables";
import { NFT_TABLE } from "../../../cli/plan/netpol-nftables";
import type { NetworkPolicyBackend } from "../../../cli/plan/network-policy";
import { type NetworkPolicyObject, type PodObject, compileNetworkPolicies } from "../../../cli/plan/netpol-rules";
import { whichForUser } from "../../helpers/rootlesskit";
import { testUser } from "../../helpers/user";
import { waitFor } from "../../helpers/process";

const TOOLS: Record<NetworkPolicyBackend, string[]> = { iptables: ["iptables-restore", "iptables-save"], nftables: ["nft"] };
const skipReason = (backend: NetworkPolicyBackend) => {
  const missing = ["unshare", "nsenter", "ip", "node", ...TOOLS[backend]].filter((t) => !whichForUser(t));
  return missing.length ? `not installed: ${missing.join(", ")} (scripts/test-deps.sh installs them)` : null;
};
for (const b of ["iptables", "nftables"] as const) if (skipReason(b)) console.log(`netpol-datapath (${b}): skipped: ${skipReason(b)}`);

const SERVER = `const net=require("net");for(const p of [8080,9090])net.createServer(s=>s.end("ok")).listen(p,"0.0.0.0");setTimeout(()=>{},6e5)`;
const client = (ip: string, port: number) =>
  `const s=require("net").connect(${port},"${ip}");s.setTimeout(1500,()=>{console.log("blocked");process.exit(0)});s.on("data",()=>{console.log("ok");process.exit(0)});s.on("error",e=>{console.log("error "+e.code);process.exit(0)})`;

describe.each(["iptables", "nftables"] as const)("NetworkPolicy rules on a real bridge, in a user's network namespace: %s", (backend) => {
  if (skipReason(backend)) return void it.skip(skipReason(backend)!, () => {});
  const user = testUser(`rk8s-np-${backend.slice(0, 3)}`, {});
  let writer: RuleWriter;
  let holder: ChildProcess;
  const pids: Record<"client" | "web", number> = { client: 0, web: 0 };
  const inNs = (argv: string[], input?: string) =>
    user.run(whichForUser("nsenter")!, ["-U", "-n", "--preserve-credentials", "-t", String(holder.pid), ...argv], {}, input);
  const inPod = (p: keyof typeof pids, argv: string[]) =>
    user.run(
      whichForUser("nsenter")!,
      ["-U", "--preserve-credentials", "-t", String(holder.pid), `--net=/proc/${pids[p]}/ns/net`, ...argv],
      {},
    );

  const pod = (name: "client" | "web", ip: string, labels: Record<string, string>): PodObject => ({
    metadata: { namespace: "shop", name, uid: `uid-${name}`, labels },
    spec: { nodeName: "n1" },
    status: { phase: "Running", podIP: ip },
  });
  /** What the enforcer writes, written as it writes it (its RuleWriter), the commands entered into the namespace. */
  const apply = async (pods: PodObject[], policies: NetworkPolicyObject[]) => {
    const failed = await writer.apply(
      compileNetworkPolicies({ nodeName: "n1", pods, namespaces: [{ metadata: { name: "shop" } }], policies }),
    );
    expect(failed).toBeNull();
  };
  /** Our chains or table, as the kernel holds them now. */
  const ours = () =>
    backend === "iptables"
      ? parseSavedFilter(inNs([whichForUser("iptables-save")!, "-t", "filter"]).stdout).chains
      : inNs([whichForUser("nft")!, "list", "tables"])
          .stdout.trim()
          .split("\n")
          .filter(Boolean);
  const connect = (port: number) => inPod("client", [whichForUser("node")!, "-e", client("10.244.0.3", port)]).stdout.trim();
  const clientPod = pod("client", "10.244.0.2", { app: "client" });
  const webPod = pod("web", "10.244.0.3", { app: "web" });
  const denyIngress: NetworkPolicyObject = {
    metadata: { namespace: "shop", name: "deny" },
    spec: { podSelector: {}, policyTypes: ["Ingress"] },
  };
  const allowClient: NetworkPolicyObject = {
    metadata: { namespace: "shop", name: "web-from-client" },
    spec: {
      podSelector: { matchLabels: { app: "web" } },
      policyTypes: ["Ingress"],
      ingress: [{ from: [{ podSelector: { matchLabels: { app: "client" } } }], ports: [{ protocol: "TCP", port: 8080 }] }],
    },
  };

  beforeAll(async () => {
    holder = user.spawn(whichForUser("unshare")!, ["-rn", "--", "sleep", "600"], {}, { detached: true });
    await waitFor(() => inNs(["true"]).status === 0, 10_000, "the namespace holder");
    writer = ruleWriter(backend, {
      run: async (argv, input) => {
        const r = inNs([whichForUser(argv[0]!) ?? argv[0]!, ...argv.slice(1)], input);
        return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
      },
    });
    const setup = [
      "set -e",
      "ip link set lo up",
      "ip link add br0 type bridge && ip addr add 10.244.0.1/24 dev br0 && ip link set br0 up",
      "for p in client:2 web:3; do",
      "  n=${p%%:*}; i=${p##*:}",
      "  setsid unshare -n sleep 600 </dev/null >/dev/null 2>&1 & pid=$!",
      '  for _ in $(seq 50); do [ "$(readlink /proc/$pid/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.1; done',
      "  ip link add v$n type veth peer name eth0 netns $pid",
      "  ip link set v$n master br0 up",
      '  nsenter -t $pid -n sh -c "ip link set lo up; ip addr add 10.244.0.$i/24 dev eth0; ip link set eth0 up"',
      '  echo "$n $pid"',
      "done",
      `cat /proc/sys/net/bridge/bridge-nf-call-iptables`,
    ].join("\n");
    const r = inNs(["bash", "-c", setup]);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split("\n");
    for (const l of lines.slice(0, 2)) {
      const [n, pid] = l.split(" ");
      pids[n as "client" | "web"] = Number(pid);
    }
    expect(lines[2], "br_netfilter sends bridged packets through iptables in a new namespace").toBe("1");
    const server = user.spawn(
      whichForUser("nsenter")!,
      ["-U", "--preserve-credentials", "-t", String(holder.pid), `--net=/proc/${pids.web}/ns/net`, whichForUser("node")!, "-e", SERVER],
      {},
      { detached: true },
    );
    server.unref();
    await waitFor(() => connect(8080) === "ok", 15_000, "the web pod's server");
  }, 60_000);

  afterAll(() => {
    for (const pid of Object.values(pids)) if (pid) process.kill(pid, "SIGKILL");
    if (holder?.pid) process.kill(-holder.pid, "SIGKILL");
    user.run("pkill", ["-KILL", "-u", user.name], {});
  });

  it("no policy: both ports answer", async () => {
    await apply([clientPod, webPod], []);
    expect([connect(8080), connect(9090)]).toEqual(["ok", "ok"]);
  });

  it("default-deny ingress: neither port answers", async () => {
    await apply([clientPod, webPod], [denyIngress]);
    expect([connect(8080), connect(9090)]).toEqual(["blocked", "blocked"]);
  });

  it("allowed from app=client on TCP 8080: that port answers, the other does not", async () => {
    await apply([clientPod, webPod], [denyIngress, allowClient]);
    expect([connect(8080), connect(9090)]).toEqual(["ok", "blocked"]);
  });

  it("a client whose labels do not match is not let in", async () => {
    await apply([pod("client", "10.244.0.2", { app: "other" }), webPod], [denyIngress, allowClient]);
    expect(connect(8080)).toBe("blocked");
  });

  it("default-deny egress on the client stops it even where the web pod lets it in", async () => {
    const denyEgress: NetworkPolicyObject = {
      metadata: { namespace: "shop", name: "client-out" },
      spec: { podSelector: { matchLabels: { app: "client" } }, policyTypes: ["Egress"] },
    };
    await apply([clientPod, webPod], [allowClient, denyEgress]);
    expect(connect(8080)).toBe("blocked");
  });

  it("every policy removed: both ports answer again, and no per-pod chain is left", async () => {
    await apply([clientPod, webPod], []);
    expect([connect(8080), connect(9090)]).toEqual(["ok", "ok"]);
    expect(ours()).toEqual(backend === "iptables" ? ["RK8S-NETPOL"] : [`table ip ${NFT_TABLE}`]);
    if (backend === "nftables") expect(inNs([whichForUser("nft")!, "list", "table", "ip", NFT_TABLE]).stdout).not.toMatch(/chain [ie]_/);
  });

  it("turned off (what `netpol remove` does when install turns enforcement off): nothing of ours is left, and traffic passes", async () => {
    await apply([clientPod, webPod], [denyIngress]);
    expect([connect(8080)]).toEqual(["blocked"]);
    expect(await writer.remove()).toBeNull();
    expect(ours()).toEqual([]);
    if (backend === "iptables") expect(inNs([whichForUser("iptables-save")!, "-t", "filter"]).stdout).not.toContain("RK8S-");
    expect([connect(8080), connect(9090)]).toEqual(["ok", "ok"]);
  });
});
