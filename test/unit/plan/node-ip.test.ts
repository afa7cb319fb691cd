// install --node-ip: the host address a control plane advertises, so that pods on other hosts reach
// it (the `kubernetes` Service's endpoint, the node's InternalIP), from the plan (cli/plan/node.ts)
// to the files that carry it, and token create's refusal without it. The host is the Debian 12
// fixture of facts-builder.ts (address 192.168.1.20).
import type { SystemdUser } from "../../../cli/clients/systemd";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { createToken } from "../../../cli/apply/token";
import { UserError } from "../../../cli/errors";
import { buildPlan } from "../../../cli/plan/index";
import { advertisedIP } from "../../../cli/plan/node";
import { apiServerArgs, kubeletArgs } from "../../../cli/render/components";
import { kubeProxyConfiguration } from "../../../cli/render/kube-configs";
import { joinServerUrl } from "../../../cli/render/join";
import { overlayConfig } from "../../../cli/render/overlay";
import { certSpecs } from "../../../cli/render/pki";
import { renderChildScript } from "../../../cli/render/scripts";
import { baseFacts, upstreamVersions, withFacts } from "./facts-builder";

const versions = upstreamVersions();
const refusal = (f: () => unknown): UserError => {
  try {
    f();
  } catch (e) {
    return e as UserError;
  }
  throw new Error("not refused");
};

describe("install --node-ip", () => {
  const single = buildPlan(baseFacts(), {}, versions);
  const cp = buildPlan(baseFacts(), { nodeIP: "192.168.1.20" }, versions);

  it("default: the node advertises its namespace's address, and nothing goes on the namespace's loopback", () => {
    expect(single.node.ip).toBeUndefined();
    expect(advertisedIP(single)).toBe(single.network.namespaceIP);
    expect(kubeletArgs(single)).toContain(`--node-ip=${single.network.namespaceIP}`);
    expect(apiServerArgs(single)).toContain(`--advertise-address=${single.network.namespaceIP}`);
    expect(renderChildScript(single)).not.toContain("dev lo");
    // The overlay still has the host's address to publish its port on.
    expect(overlayConfig(single).publicIP).toBe("192.168.1.20");
  });

  it("a host address: the kubelet's --node-ip, the API server's --advertise-address, the namespace's loopback, the kubelet's certificate, the join URL", () => {
    expect(cp.node.ip).toBe("192.168.1.20");
    expect(kubeletArgs(cp)).toContain("--node-ip=192.168.1.20");
    expect(apiServerArgs(cp)).toContain("--advertise-address=192.168.1.20");
    expect(renderChildScript(cp)).toContain("ip -4 addr replace 192.168.1.20/32 dev lo ||");
    expect(certSpecs(cp).find((c) => c.name === "kubeletServing")!.ips).toContain("192.168.1.20");
    expect(joinServerUrl(cp)).toBe("https://192.168.1.20:6443");
    expect(overlayConfig(cp).publicIP).toBe("192.168.1.20");
  });

  it("kube-proxy's nftables mode answers NodePorts on the namespace's address too (where RootlessKit delivers them)", () => {
    const nft = buildPlan(
      withFacts(baseFacts(), (f) => {
        f.runtimes.iptables = null;
      }),
      { nodeIP: "192.168.1.20" },
      versions,
    );
    expect(nft.proxy.mode).toBe("nftables");
    expect(kubeProxyConfiguration(nft).nodePortAddresses).toEqual([`${nft.network.namespaceIP}/32`, "192.168.1.20/32"]);
    expect(kubeProxyConfiguration(cp)).not.toHaveProperty("nodePortAddresses");
    expect(YAML.stringify(kubeProxyConfiguration(single))).not.toContain("nodePortAddresses");
  });

  it("refuses what is not an address of this host (exit 3), and what is not IPv4 (exit 2)", () => {
    const other = refusal(() => buildPlan(baseFacts(), { nodeIP: "203.0.113.9" }, versions));
    expect(other).toBeInstanceOf(UserError);
    expect([other.exitCode, other.message, other.fix]).toEqual([
      3,
      "--node-ip 203.0.113.9 is not an address of this host (192.168.1.20)",
      "pass one of this host's addresses: --node-ip 192.168.1.20",
    ]);
    expect(refusal(() => buildPlan(baseFacts(), { nodeIP: "host-a" }, versions)).exitCode).toBe(2);
  });
});

describe("token create on a control plane that advertises its namespace's address", () => {
  it("refuses (exit 3) before it reads anything, naming install --node-ip with the host's address", async () => {
    const single = buildPlan(baseFacts(), {}, versions);
    // Refused before the user manager is touched: any use of it throws.
    const systemd = new Proxy({} as SystemdUser, {
      get: () => {
        throw new Error("the user manager was used");
      },
    });
    const e = (await createToken(single, { ttlSeconds: 60, description: "t", systemd }).catch((x: unknown) => x)) as UserError;
    expect(e).toBeInstanceOf(UserError);
    expect(e.exitCode).toBe(3);
    expect(e.message).toContain(`advertises its namespace's address ${single.network.namespaceIP}`);
    expect(e.fix).toContain("rootless-k8s install --node-ip 192.168.1.20");
  });
});
