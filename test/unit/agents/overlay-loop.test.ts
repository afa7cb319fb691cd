// The overlay agent's loop against a real RootlessKit (Debian's, slirp4netns, the builtin port
// driver, run by an ordinary test user as the node runs it), the real kernel's VXLAN in its network
// namespace (every `ip`/`bridge`/`iptables` command entered with nsenter, as the overlay unit runs
// inside the node's namespaces), and the loopback fixture API server (kube-api-fixture.ts: a TEST
// FIXTURE serving real-shaped Nodes, not a Kubernetes). Checked: the agent puts this host's address
// on its Node and makes the device with the node's VTEP; publishes no UDP port while it is alone;
// when a second Node appears, its route, neighbour and forwarding entries and the published port;
// a VXLAN datagram sent to the published port from the host reaches the namespace's kernel, whose
// answer leaves encapsulated for the other node's host address (received here on the host's own
// address: the data path both ways); the second Node gone, all of it is removed again.
import type { ChildProcess } from "node:child_process";
import { createSocket, type Socket } from "node:dgram";
import { existsSync, readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CommandResult, type LoopTiming, runOverlayAgent } from "../../../cli/agents/overlay-agent";
import { apiClient, readKubeconfig } from "../../../cli/clients/kubernetes";
import { rootlessKitClient } from "../../../cli/clients/rootlesskit";
import { PUBLIC_IP_ANNOTATION, vtepMac } from "../../../cli/plan/overlay";
import type { OverlayConfig } from "../../../cli/render/overlay";
import { waitFor } from "../../helpers/process";
import { type RunningRootlessKit, slirpRootlessKitSkipReason, startRootlessKit, stopGroup, whichForUser } from "../../helpers/rootlesskit";
import { testUser } from "../../helpers/user";
import { type KubeApiFixture, kubeApiFixture } from "../../helpers/kube-api-fixture";
import { makeTlsFixture, type TlsFixture } from "../../helpers/tls-fixture";

const TIMING: LoopTiming = { debounceMs: 100, resyncMs: 1000, retryMs: 200, watchSeconds: 30 };
const CHILD_IP = "10.0.2.100"; // slirp4netns's address for the namespace
/** The host's own address (not loopback): the second node's "host", where its datagrams arrive here. */
const hostIP = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

const reason =
  slirpRootlessKitSkipReason("overlay-loop") ??
  (hostIP ? null : "this host has no IPv4 address besides loopback: the second node's datagrams have nowhere to arrive");
if (reason && hostIP === undefined) console.log(`overlay-loop: skipped: ${reason}`);

/** An IPv4 header checksum / ICMP checksum: the one's complement of the one's complement sum. */
function checksum(b: Buffer): number {
  let sum = 0;
  for (let i = 0; i < b.length; i += 2) sum += (b[i]! << 8) + (b[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}
const mac = (m: string) => Buffer.from(m.split(":").map((x) => Number.parseInt(x, 16)));
const ip4 = (a: string) => Buffer.from(a.split(".").map(Number));

/** A VXLAN datagram (VNI `vni`) carrying an Ethernet frame with an ICMP echo request. */
function vxlanPing(o: { vni: number; srcMac: string; dstMac: string; src: string; dst: string; id: number }): Buffer {
  const icmp = Buffer.concat([Buffer.from([8, 0, 0, 0, o.id >> 8, o.id & 255, 0, 1]), Buffer.from("rootless-k8s overlay")]);
  icmp.writeUInt16BE(checksum(icmp), 2);
  const ip = Buffer.alloc(20);
  ip[0] = 0x45;
  ip.writeUInt16BE(20 + icmp.length, 2);
  ip[8] = 64;
  ip[9] = 1;
  ip4(o.src).copy(ip, 12);
  ip4(o.dst).copy(ip, 16);
  ip.writeUInt16BE(checksum(ip), 10);
  const eth = Buffer.concat([mac(o.dstMac), mac(o.srcMac), Buffer.from([0x08, 0x00])]);
  const vx = Buffer.from([0x08, 0, 0, 0, (o.vni >> 16) & 255, (o.vni >> 8) & 255, o.vni & 255, 0]);
  return Buffer.concat([vx, eth, ip, icmp]);
}

/** What a VXLAN datagram carries: its VNI, the inner frame's MACs, and (for IPv4 ICMP) its addresses and type. */
function readVxlan(d: Buffer) {
  const vni = (d[4]! << 16) | (d[5]! << 8) | d[6]!;
  const hex = (b: Buffer) => [...b].map((x) => x.toString(16).padStart(2, "0")).join(":");
  const eth = d.subarray(8);
  const ip = eth.subarray(14);
  return {
    vni,
    dstMac: hex(eth.subarray(0, 6)),
    srcMac: hex(eth.subarray(6, 12)),
    src: [...ip.subarray(12, 16)].join("."),
    dst: [...ip.subarray(16, 20)].join("."),
    protocol: ip[9],
    icmpType: ip[(ip[0]! & 15) * 4],
  };
}

describe.skipIf(reason !== null)(
  "the overlay agent's loop, against a real RootlessKit, the kernel's VXLAN and the fixture API server",
  () => {
    const user = testUser("rk8s-overlay", { subIds: "auto" });
    const work = user.newDir("rk8s-overlay-");
    const stateDir = join(work, "state");
    const rk = rootlessKitClient(join(stateDir, "api.sock"));
    let tls: TlsFixture;
    let api: KubeApiFixture;
    let rootlesskit: RunningRootlessKit | null = null;
    let config: OverlayConfig;
    const log: string[] = [];
    let loop: { ac: AbortController; done: Promise<void> } | null = null;
    let peer: Socket | null = null;
    const received: Buffer[] = [];

    /** A command inside the namespaces, as the test user (root there): what the overlay unit's `rootless-k8s-enter` does. */
    const inside = (argv: string[]): Promise<CommandResult> =>
      new Promise((resolve) => {
        const child = user.spawn(
          whichForUser("nsenter"),
          ["-U", "-n", "--preserve-credentials", "-t", String(rootlesskit!.childPid), whichForUser(argv[0]!) ?? argv[0]!, ...argv.slice(1)],
          { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
        ) as ChildProcess;
        let stdout = "";
        let stderr = "";
        child.stdout!.on("data", (d) => (stdout += d));
        child.stderr!.on("data", (d) => (stderr += d));
        child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
      });
    const json = async (argv: string[]) => JSON.parse((await inside(argv)).stdout || "[]") as Record<string, unknown>[];
    const udpPorts = async () =>
      (await rk.listPorts())
        .filter((p) => p.spec.proto === "udp")
        .map((p) => `${p.spec.parentIP}:${p.spec.parentPort}>${p.spec.childIP}:${p.spec.childPort}`);

    beforeAll(async () => {
      rootlesskit = await startRootlessKit(user, stateDir);
      // The second node's host: a UDP socket on this host's own address, on the overlay's port.
      peer = createSocket("udp4");
      peer.on("message", (m) => received.push(m));
      await new Promise<void>((resolve) => peer!.bind(0, hostIP, resolve));
      const port = peer.address().port;
      tls = makeTlsFixture();
      api = await kubeApiFixture(tls);
      config = {
        kubeconfig: tls.kubeconfig(api.url),
        rootlesskitSocket: join(stateDir, "api.sock"),
        nodeName: "node1",
        // This node's host address: loopback here, so that its published port and the peer's socket
        // (on the host's own address, the same port) do not collide on one machine.
        publicIP: "127.0.0.1",
        device: "rk8s.1",
        vni: 1,
        port,
        mtu: 1500,
        pods: "10.244.0.0/16",
        childIP: CHILD_IP,
        probePort: 10250,
        stateFile: join(work, "overlay-state.json"),
      };
      api.put("nodes", { metadata: { name: "node1" }, spec: { podCIDR: "10.244.0.0/24" } });
      // The device an earlier release made: the kernel's default outer UDP checksum (udpcsum),
      // which `ip link set` cannot change; the agent must make it anew.
      const old = await inside([
        "ip",
        "link",
        "add",
        "rk8s.1",
        "type",
        "vxlan",
        "id",
        "1",
        "dstport",
        String(port),
        "nolearning",
        "udpcsum",
      ]);
      if (old.code !== 0) throw new Error(`ip link add (udpcsum): ${old.stderr}`);
      const ac = new AbortController();
      const done = runOverlayAgent(
        config,
        {
          api: apiClient(await readKubeconfig(config.kubeconfig)),
          rootlesskit: rk,
          run: inside,
          writeFile: async (file, text) => {
            const r = await inside(["sh", "-c", `echo ${text} > ${file}`]);
            if (r.code !== 0) throw new Error(r.stderr);
          },
          log: (l) => log.push(l),
          // A TCP connection from inside the namespace, as the agent (which runs there) opens it.
          probe: async (host, port) => {
            const r = await inside([
              "python3",
              "-c",
              "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2)",
              host,
              String(port),
            ]);
            return r.code === 0 ? null : r.stderr.trim().split("\n").pop() || `exit ${r.code}`;
          },
        },
        ac.signal,
        TIMING,
      );
      loop = { ac, done };
    }, 90_000);

    afterAll(async () => {
      if (loop) {
        loop.ac.abort(new Error("SIGTERM"));
        await loop.done;
      }
      peer?.close();
      await api?.close();
      await stopGroup(rootlesskit?.process);
    });

    it("alone: annotates its Node with this host's address, makes the device with the node's VTEP, publishes nothing", async () => {
      await waitFor(
        async () =>
          ((await json(["ip", "-j", "addr", "show", "dev", "rk8s.1"]))[0]?.flags as string[] | undefined)?.includes("UP") === true,
        15_000,
        () => `the device, up (log: ${log.join(" | ")})`,
      );
      const link = (await json(["ip", "-j", "-d", "addr", "show", "dev", "rk8s.1"]))[0] as {
        address: string;
        mtu: number;
        flags: string[];
        addr_info: { family: string; local: string; prefixlen: number }[];
        linkinfo: { info_kind: string; info_data: { id: number; port: number; learning: boolean; udp_csum: boolean } };
      };
      expect(link.address).toBe("0a:58:0a:f4:00:00");
      expect(link.mtu).toBe(1500);
      expect(link.flags).toContain("UP");
      expect(link.addr_info.filter((a) => a.family === "inet").map((a) => `${a.local}/${a.prefixlen}`)).toEqual(["10.244.0.0/32"]);
      expect(link.linkinfo).toMatchObject({
        info_kind: "vxlan",
        info_data: { id: 1, port: config.port, learning: false, udp_csum: false },
      });
      expect(log).toContain("rk8s.1: deleted to be made anew: it sums its outer UDP (udpcsum)");
      expect((await inside(["cat", "/proc/sys/net/ipv4/conf/rk8s.1/rp_filter"])).stdout.trim()).toBe("2");
      await waitFor(
        async () => api.get("nodes", "default", "node1")?.metadata.annotations?.[PUBLIC_IP_ANNOTATION] === "127.0.0.1",
        5000,
        () => "the annotation",
      );
      await new Promise((r) => setTimeout(r, 1500)); // a resync: still nothing to publish
      expect(await udpPorts()).toEqual([]);
      expect(await json(["ip", "-j", "route", "show", "dev", "rk8s.1"])).toEqual([]);
    });

    it("a second Node: its route, neighbour and forwarding entry, and the UDP port published on this host's address", async () => {
      api.put("nodes", {
        metadata: { name: "node2", annotations: { [PUBLIC_IP_ANNOTATION]: hostIP! } },
        spec: { podCIDR: "10.244.1.0/24" },
      });
      await waitFor(
        async () => (await udpPorts()).length === 1,
        10_000,
        () => `the published port (log: ${log.join(" | ")})`,
      );
      expect(await udpPorts()).toEqual([`127.0.0.1:${config.port}>${CHILD_IP}:${config.port}`]);
      expect(await json(["ip", "-j", "route", "show", "dev", "rk8s.1"])).toEqual([
        { dst: "10.244.1.0/24", gateway: "10.244.1.0", flags: ["onlink"] },
      ]);
      expect(await json(["ip", "-j", "neigh", "show", "dev", "rk8s.1"])).toEqual([
        { dst: "10.244.1.0", lladdr: vtepMac("10.244.1.0"), state: ["PERMANENT"] },
      ]);
      expect((await json(["bridge", "-j", "fdb", "show", "dev", "rk8s.1"])).map((f) => [f.mac, f.dst])).toEqual([
        [vtepMac("10.244.1.0"), hostIP],
      ]);
    });

    it("carries a pod's packet both ways: a VXLAN ping sent to the published port is answered, encapsulated, to the other node's host", async () => {
      const sender = createSocket("udp4");
      const request = vxlanPing({
        vni: 1,
        srcMac: vtepMac("10.244.1.0"),
        dstMac: vtepMac("10.244.0.0"),
        src: "10.244.1.7",
        dst: "10.244.0.0",
        id: 4242,
      });
      try {
        await waitFor(
          async () => {
            await new Promise<void>((resolve, reject) =>
              sender.send(request, config.port, "127.0.0.1", (e) => (e ? reject(e) : resolve())),
            );
            await new Promise((r) => setTimeout(r, 300));
            return received.length > 0;
          },
          10_000,
          () => "an answer from the namespace's kernel",
        );
      } finally {
        sender.close();
      }
      const answer = received.map(readVxlan).find((d) => d.protocol === 1);
      expect(answer).toEqual({
        vni: 1,
        dstMac: vtepMac("10.244.1.0"),
        srcMac: vtepMac("10.244.0.0"),
        src: "10.244.0.0",
        dst: "10.244.1.7",
        protocol: 1,
        icmpType: 0, // echo reply
      });
    });

    it("carries a pod's UDP that netfilter rewrote (as kube-proxy does for a Service): it reaches the other node's host", async () => {
      // A pod (its own network namespace behind a veth pair on a bridge, as the CNI bridge plugin
      // makes it) sends to a Service-like address, DNATed to a pod of the other node. On a real
      // node this datagram left tap0 with a bad outer checksum while the device summed its outer
      // UDP (issue 36); this small setup does not show that fault with udpcsum either (the e2e
      // worker scenario's 30 datagrams through a ClusterIP do), so this checks the rewritten path
      // itself: routed into the overlay, encapsulated, and out to the other node's host.
      const setup = await inside([
        "sh",
        "-c",
        [
          "set -e",
          "unshare -n sleep 120 >/dev/null 2>&1 </dev/null & p=$!",
          "sleep 0.3",
          "ip link add rk8s-tb0 type bridge",
          "ip addr add 10.244.0.1/24 dev rk8s-tb0",
          "ip link set rk8s-tb0 up",
          "ip link add rk8s-t0 type veth peer name eth0 netns $p",
          "ip link set rk8s-t0 master rk8s-tb0 up",
          "echo 1 > /proc/sys/net/ipv4/ip_forward",
          "nsenter -n -t $p sh -c 'ip addr add 10.244.0.5/24 dev eth0 && ip link set eth0 up && ip route add default via 10.244.0.1'",
          "echo $p",
        ].join("\n"),
      ]);
      expect(setup.stderr).toBe("");
      const pod = setup.stdout.trim();
      const rule = ["PREROUTING", "-p", "udp", "-d", "10.96.0.50", "--dport", "53", "-j", "DNAT", "--to-destination", "10.244.1.5:5353"];
      const add = await inside(["iptables", "-w", "-t", "nat", "-A", ...rule]);
      expect(add.stderr).toBe("");
      const send = "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'dns?', ('10.96.0.50', 53))";
      try {
        await waitFor(
          async () => {
            await inside(["nsenter", "-n", "-t", pod, "python3", "-c", send]);
            await new Promise((r) => setTimeout(r, 300));
            return received.map(readVxlan).some((d) => d.protocol === 17 && d.dst === "10.244.1.5");
          },
          10_000,
          () => `the rewritten datagram at the peer's host (log: ${log.join(" | ")})`,
        );
      } finally {
        await inside(["iptables", "-w", "-t", "nat", "-D", ...rule]);
        await inside(["ip", "link", "del", "rk8s-t0"]);
        await inside(["ip", "link", "del", "rk8s-tb0"]);
        await inside(["kill", pod]);
      }
      expect(received.map(readVxlan).find((d) => d.protocol === 17)).toMatchObject({
        vni: 1,
        dstMac: vtepMac("10.244.1.0"),
        src: "10.244.0.5",
        dst: "10.244.1.5",
      });
    });

    it("probes the peer's VTEP on the kubelet's port through the overlay (a SYN, encapsulated to its host) and writes what it found", async () => {
      await waitFor(
        () => received.map(readVxlan).some((d) => d.protocol === 6 && d.dst === "10.244.1.0"),
        10_000,
        () => "the probe's SYN at the peer's host",
      );
      const syn = received.map(readVxlan).find((d) => d.protocol === 6)!;
      expect(syn).toMatchObject({ vni: 1, dstMac: vtepMac("10.244.1.0"), src: "10.244.0.0", dst: "10.244.1.0" });
      // Nothing answers there (the peer is a bare UDP socket): the state says so, naming the port to open.
      await waitFor(
        () => existsSync(config.stateFile) && JSON.parse(readFileSync(config.stateFile, "utf8")).peers.length === 1,
        10_000,
        () => "the state file",
      );
      const state = JSON.parse(readFileSync(config.stateFile, "utf8"));
      expect(state).toMatchObject({ schemaVersion: 1, vtep: "10.244.0.0", waiting: [] });
      expect(state.peers).toEqual([
        { node: "node2", podCidr: "10.244.1.0/24", vtep: "10.244.1.0", publicIP: hostIP, reachable: false, error: expect.any(String) },
      ]);
      expect(log.some((l) => l.includes(`is UDP ${config.port} open both ways between the hosts?`))).toBe(true);
    });

    it("pod-to-pod traffic leaving by the device keeps its source: the rule ahead of the bridge's masquerade", async () => {
      const nat = await inside(["iptables", "-w", "-t", "nat", "-S", "POSTROUTING"]);
      expect(nat.stderr).toBe("");
      expect(nat.stdout.split("\n")[1]).toMatch(/^-A POSTROUTING -s 10\.244\.0\.0\/16 -d 10\.244\.0\.0\/16 -o rk8s\.1 .*-j ACCEPT$/);
    });

    it("... and stays first when kube-proxy puts its masquerade ahead of it (as when it starts after the agent)", async () => {
      // kube-proxy's jump, inserted at the top as its ensureRule(Prepend) does.
      const chain = await inside(["iptables", "-w", "-t", "nat", "-N", "KUBE-POSTROUTING"]);
      expect(chain.stderr).toBe("");
      const jump = ["POSTROUTING", "-m", "comment", "--comment", "kubernetes postrouting rules", "-j", "KUBE-POSTROUTING"];
      expect((await inside(["iptables", "-w", "-t", "nat", "-I", jump[0]!, "1", ...jump.slice(1)])).code).toBe(0);
      try {
        await waitFor(
          async () =>
            /keeps its source/.test((await inside(["iptables", "-w", "-t", "nat", "-S", "POSTROUTING"])).stdout.split("\n")[1] ?? ""),
          10_000,
          () => `the rule first again (log: ${log.join(" | ")})`,
        );
        const rules = (await inside(["iptables", "-w", "-t", "nat", "-S", "POSTROUTING"])).stdout.split("\n");
        expect(rules.filter((l) => l.includes("keeps its source"))).toHaveLength(1);
        expect(rules[2]).toContain("KUBE-POSTROUTING");
        expect(log).toContain("pod to pod across nodes keeps its source: its nat rule is first again");
      } finally {
        await inside(["iptables", "-w", "-t", "nat", "-D", ...jump]);
        await inside(["iptables", "-w", "-t", "nat", "-X", "KUBE-POSTROUTING"]);
      }
    });

    it("the second Node gone: its entries removed and the UDP port unpublished", async () => {
      api.remove("nodes", "default", "node2");
      await waitFor(
        async () => (await udpPorts()).length === 0,
        10_000,
        () => `the port unpublished (log: ${log.join(" | ")})`,
      );
      expect(await json(["ip", "-j", "route", "show", "dev", "rk8s.1"])).toEqual([]);
      expect(await json(["ip", "-j", "neigh", "show", "dev", "rk8s.1"])).toEqual([]);
      expect(await json(["bridge", "-j", "fdb", "show", "dev", "rk8s.1"])).toEqual([]);
      expect(log.some((l) => l.startsWith("unpublished udp 127.0.0.1:"))).toBe(true);
    });
  },
);
