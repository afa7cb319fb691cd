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
import {
  type NetworkPolicyObject,
  type PodObject,
  compileNetworkPolicies,
  parseSavedFilter,
  removalText,
  restoreText,
} from "../../../cli/plan/netpol-rules";
import { whichForUser } from "../../helpers/rootlesskit";
import { testUser } from "../../helpers/user";
import { waitFor } from "../../helpers/process";

const tools = ["unshare", "nsenter", "ip", "iptables-restore", "iptables-save", "node"];
const missing = tools.filter((t) => !whichForUser(t));
const reason = missing.length ? `not installed: ${missing.join(", ")} (make test-deps installs them)` : null;

const SERVER = `const net=require("net");for(const p of [8080,9090])net.createServer(s=>s.end("ok")).listen(p,"0.0.0.0");setTimeout(()=>{},6e5)`;
const client = (ip: string, port: number) =>
  `const s=require("net").connect(${port},"${ip}");s.setTimeout(1500,()=>{console.log("blocked");process.exit(0)});s.on("data",()=>{console.log("ok");process.exit(0)});s.on("error",e=>{console.log("error "+e.code);process.exit(0)})`;

describe.skipIf(reason !== null)("NetworkPolicy rules on a real bridge, in a user's network namespace", () => {
  const user = testUser("rk8s-netpol", {});
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
  const apply = (pods: PodObject[], policies: NetworkPolicyObject[]) => {
    const saved = inNs([whichForUser("iptables-save")!, "-t", "filter"]);
    expect(saved.status, saved.stderr).toBe(0);
    const text = restoreText(
      compileNetworkPolicies({ nodeName: "n1", pods, namespaces: [{ metadata: { name: "shop" } }], policies }),
      parseSavedFilter(saved.stdout),
    );
    const r = inNs([whichForUser("iptables-restore")!, "--noflush"], text);
    expect(r.status, `${r.stderr}\n${text}`).toBe(0);
  };
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

  it("no policy: both ports answer", () => {
    apply([clientPod, webPod], []);
    expect([connect(8080), connect(9090)]).toEqual(["ok", "ok"]);
  });

  it("default-deny ingress: neither port answers", () => {
    apply([clientPod, webPod], [denyIngress]);
    expect([connect(8080), connect(9090)]).toEqual(["blocked", "blocked"]);
  });

  it("allowed from app=client on TCP 8080: that port answers, the other does not", () => {
    apply([clientPod, webPod], [denyIngress, allowClient]);
    expect([connect(8080), connect(9090)]).toEqual(["ok", "blocked"]);
  });

  it("a client whose labels do not match is not let in", () => {
    apply([pod("client", "10.244.0.2", { app: "other" }), webPod], [denyIngress, allowClient]);
    expect(connect(8080)).toBe("blocked");
  });

  it("default-deny egress on the client stops it even where the web pod lets it in", () => {
    const denyEgress: NetworkPolicyObject = {
      metadata: { namespace: "shop", name: "client-out" },
      spec: { podSelector: { matchLabels: { app: "client" } }, policyTypes: ["Egress"] },
    };
    apply([clientPod, webPod], [allowClient, denyEgress]);
    expect(connect(8080)).toBe("blocked");
  });

  it("every policy removed: both ports answer again, and no per-pod chain is left", () => {
    apply([clientPod, webPod], []);
    expect([connect(8080), connect(9090)]).toEqual(["ok", "ok"]);
    const saved = inNs([whichForUser("iptables-save")!, "-t", "filter"]).stdout;
    expect(parseSavedFilter(saved).chains).toEqual(["RK8S-NETPOL"]);
    expect(saved).toContain("-A FORWARD -j RK8S-NETPOL");
  });

  it("turned off (removalText, what the enforcer runs when its config is gone): no hook and no chain of ours is left", () => {
    apply([clientPod, webPod], [denyIngress]);
    const r = inNs(
      [whichForUser("iptables-restore")!, "--noflush"],
      removalText(parseSavedFilter(inNs([whichForUser("iptables-save")!, "-t", "filter"]).stdout)),
    );
    expect(r.status, r.stderr).toBe(0);
    const saved = inNs([whichForUser("iptables-save")!, "-t", "filter"]).stdout;
    expect(saved).not.toContain("RK8S-");
    expect([connect(8080), connect(9090)]).toEqual(["ok", "ok"]);
  });
});
