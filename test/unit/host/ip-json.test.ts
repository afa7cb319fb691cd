// iproute2's JSON (cli/host/parse/ip-json.ts), from real output: iproute2 6.1.0 (Debian 12) in a
// user and network namespace (unshare -Urn) after the overlay agent's own commands made a VXLAN
// device with one peer (ip link add rk8s.1 ... type vxlan id 1 dstport 8472 nolearning, bridge fdb
// append, ip neigh replace, ip route replace ... onlink).
import { describe, expect, it } from "vitest";
import { parseIpAddr, parseOverlayState } from "../../../cli/host/parse/ip-json";

const ADDR =
  '[{"ifindex":2,"ifname":"rk8s.1","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"noqueue","operstate":"UNKNOWN","group":"default","txqlen":1000,"link_type":"ether","address":"0a:58:0a:f4:00:00","broadcast":"ff:ff:ff:ff:ff:ff","addr_info":[{"family":"inet","local":"10.244.0.0","prefixlen":32,"scope":"global","label":"rk8s.1","valid_life_time":4294967295,"preferred_life_time":4294967295},{"family":"inet6","local":"fe80::858:aff:fef4:0","prefixlen":64,"scope":"link","tentative":true,"valid_life_time":4294967295,"preferred_life_time":4294967295}]}]';
/** `ip -d -j addr show dev rk8s.1` of a device made by an earlier release (udpcsum), trimmed. */
const ADDR_D =
  '[{"ifindex":7,"ifname":"rk8s.1","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"address":"0a:58:0a:f4:00:00","linkinfo":{"info_kind":"vxlan","info_data":{"id":1,"port_range":{"low":0,"high":0},"port":8472,"learning":false,"ttl":0,"df":"unset","ageing":300,"udp_csum":true,"udp_zero_csum6_tx":false,"udp_zero_csum6_rx":false}},"addr_info":[{"family":"inet","local":"10.244.0.0","prefixlen":32,"scope":"global","label":"rk8s.1"}]}]';
const ROUTES = '[{"dst":"10.244.1.0/24","gateway":"10.244.1.0","flags":["onlink"]}]';
const NEIGH = '[{"dst":"10.244.1.0","lladdr":"0a:58:0a:f4:01:00","state":["PERMANENT"]}]';
const FDB = '[{"mac":"0a:58:0a:f4:01:00","dst":"198.51.100.2","flags":["self"],"state":"permanent"}]';

describe("parseIpAddr", () => {
  it("reads the device's MAC, MTU, state and IPv4 addresses", () => {
    expect(parseIpAddr(ADDR)).toEqual({ mac: "0a:58:0a:f4:00:00", mtu: 1500, up: true, ipv4: ["10.244.0.0/32"], vxlan: null });
  });
  it("with -d: a VXLAN device's VNI, UDP port and outer UDP checksum (iproute2 6.1's output on kernel 6.18)", () => {
    expect(parseIpAddr(ADDR_D)?.vxlan).toEqual({ vni: 1, port: 8472, udpCsum: true });
    expect(parseIpAddr(ADDR_D.replace('"udp_csum":true', '"udp_csum":false'))?.vxlan?.udpCsum).toBe(false);
    expect(parseIpAddr(ADDR_D.replace('"udp_csum":true,', ""))?.vxlan?.udpCsum).toBeNull();
    expect(parseIpAddr(ADDR_D.replace('"info_kind":"vxlan"', '"info_kind":"bridge"'))?.vxlan).toBeNull();
  });
  it("a missing device (ip prints nothing on stdout) or output that is not JSON: null", () => {
    expect(parseIpAddr("")).toBeNull();
    expect(parseIpAddr("[]")).toBeNull();
    expect(parseIpAddr('Device "rk8s.1" does not exist.')).toBeNull();
  });
  it("a device that is down", () => {
    expect(parseIpAddr(ADDR.replace('"UP",', ""))?.up).toBe(false);
  });
});

describe("parseOverlayState", () => {
  it("reads routes, neighbours and forwarding entries", () => {
    expect(parseOverlayState(ROUTES, NEIGH, FDB)).toEqual({
      routes: [{ dst: "10.244.1.0/24", gateway: "10.244.1.0" }],
      neighbours: [{ dst: "10.244.1.0", lladdr: "0a:58:0a:f4:01:00" }],
      fdb: [{ mac: "0a:58:0a:f4:01:00", dst: "198.51.100.2" }],
    });
  });
  it("an empty device, and entries without the fields it needs", () => {
    expect(parseOverlayState("[]", "[]", "[]")).toEqual({ routes: [], neighbours: [], fdb: [] });
    expect(parseOverlayState('[{"gateway":"1.2.3.4"}]', '[{"dst":"10.244.1.0"}]', "not json")).toEqual({
      routes: [],
      neighbours: [{ dst: "10.244.1.0", lladdr: null }],
      fdb: [],
    });
  });
});
