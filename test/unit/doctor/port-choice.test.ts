// The one rule for the API port (cli/doctor/port-choice.ts), and doctor's "ports" check built on
// it: free or the node's own is ok, taken without --api-port is a warning naming where install will
// publish, taken with --api-port fails as install refuses it. "Ours" is decided by the socket's owner.
import { describe, expect, it } from "vitest";
import { choosePort, firstFreePort, holderWords } from "../../../cli/doctor/port-choice";
import { diagnose } from "../../../cli/doctor/index";
import type { Facts } from "../../../cli/host/facts";
import { baseFacts, withFacts } from "../plan/facts-builder";

const me = 1000;
const bob = { port: 6443, uid: 1006, address: "127.0.0.1" };

describe("choosePort", () => {
  it("free, ours, moved and taken", () => {
    const req = { wanted: 6443, fixed: false, own: [] as number[], uid: me };
    expect(choosePort([], req)).toEqual({ kind: "free", port: 6443 });
    expect(choosePort([bob, { port: 6444, uid: 0, address: "0.0.0.0" }], req)).toEqual({
      kind: "moved",
      port: 6445,
      from: 6443,
      holders: [1006],
    });
    expect(choosePort([bob], { ...req, fixed: true })).toEqual({ kind: "taken", port: 6443, holders: [1006], free: 6444 });
    // The installed node's port, held by this user: its own. Held by someone else: not, whatever the receipt says.
    const mine = { ...bob, uid: me };
    expect(choosePort([mine], { ...req, own: [6443] })).toEqual({ kind: "ours", port: 6443 });
    expect(choosePort([bob], { ...req, own: [6443] })).toMatchObject({ kind: "moved", port: 6444 });
    expect(choosePort([mine, bob], { ...req, own: [6443], fixed: true })).toMatchObject({ kind: "taken", holders: [1000, 1006] });
    // This user's own program on 6443, with no node of ours there: in the way like any other.
    expect(choosePort([mine], req)).toMatchObject({ kind: "moved", port: 6444 });
  });
  it("a port whose claim failed (another install bound it first) is avoided even though no reading shows it", () => {
    const req = { wanted: 6443, fixed: false, own: [], uid: me };
    expect(choosePort([], req, [6443])).toEqual({ kind: "moved", port: 6444, from: 6443, holders: [] });
    expect(choosePort([], req, [6443, 6444])).toMatchObject({ port: 6445 });
    expect(firstFreePort([bob], 6443, [6444])).toBe(6445);
  });
  it("names holders", () => {
    expect(holderWords([])).toBe("another program");
    expect(holderWords([1006], { 1006: "bob" })).toBe("bob (uid 1006)");
    expect(holderWords([0, 1006], { 0: "root" })).toBe("root (uid 0) and uid 1006");
  });
});

describe("doctor's ports check agrees with install", () => {
  const ports = (f: Facts) => diagnose(f).outcomes.find((o) => o.id === "ports")!;
  it("taken without --api-port: a warning saying where install publishes; doctor's exit stays 0", () => {
    const f = withFacts(baseFacts(), (x) => {
      x.network.listeners.push(bob);
      x.network.listenerNames[1006] = "bob";
    });
    const o = ports(f);
    expect(o.status).toBe("warn");
    expect(o.summary).toBe("6443 is taken by bob (uid 1006); install will publish the API server on 6444, or choose one with --api-port");
    expect(o.fix?.user?.[0]).toContain("ss -ltnp 'sport = :6443'");
  });
  it("taken with --api-port: a failure, as install refuses it, naming a free port", () => {
    const f = withFacts(baseFacts(), (x) => {
      x.network.listeners.push(bob);
      x.network.apiPortFixed = true;
    });
    const o = ports(f);
    expect(o.status).toBe("fail");
    expect(o.summary).toBe("--api-port 6443 is taken by uid 1006: install refuses it; 6444 is free");
    expect(o.fix?.user?.[0]).toBe("rootless-k8s install --api-port 6444");
  });
  it("the installed node's own port, held by this user: ok; a worker's kubelet port taken: a warning, never a failure", () => {
    const own = withFacts(baseFacts(), (x) => {
      x.network.listeners.push({ ...bob, uid: me });
      x.network.ownPorts = [6443];
      x.network.apiPortFixed = true;
    });
    expect(ports(own)).toMatchObject({ status: "ok", summary: "6443 is held by your node's API server" });
    const kubelet = withFacts(baseFacts(), (x) => x.network.listeners.push({ port: 10250, uid: 0, address: "0.0.0.0" }));
    const o = ports(kubelet);
    expect(o.status).toBe("warn");
    expect(o.summary).toMatch(
      /^6443 free; 10250 is taken by root \(uid 0\): a control plane installs, but this host cannot join a cluster as a worker/,
    );
  });
});
