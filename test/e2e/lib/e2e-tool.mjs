// Small probes the e2e scenarios run as the test user (bundled once per run into $E2E_OPT/lib with
// the product's CRI client, so the CRI calls are exactly those `status` and `doctor --node` make):
//
//   e2e-tool.mjs cri-status SOCKET            runtime name/version and conditions (RuntimeReady, NetworkReady)
//   e2e-tool.mjs sandbox-image SOCKET         the pod sandbox image the runtime is configured with
//   e2e-tool.mjs running SOCKET               ids of the containers the runtime runs (CONTAINER_RUNNING)
//   e2e-tool.mjs pod SOCKET [CGROUP_PARENT]   RunPodSandbox → "ready <ip>" → stop (3 tries) and remove it
//   e2e-tool.mjs receipt-check RECEIPT        every file and binary the receipt lists has its hash and mode
//   e2e-tool.mjs json FILE|- EXPR             prints a value of a JSON document (EXPR like .a.b[0].c)
//   e2e-tool.mjs oci-image BUSYBOX OUT NAME [CMD_JSON]
//   e2e-tool.mjs udp HOST PORT REQUEST TRIES  sends REQUEST TRIES times, each from a new socket (a new
//                                             source port), 3 s for an answer: "N/TRIES answered: A B"
//   e2e-tool.mjs client-addresses URL N C     N GETs of an agnhost /clientip URL, C at a time, each a new
//                                             connection: a line "COUNT ADDRESS" per address the pod saw
import { createHash } from "node:crypto";
import { createSocket } from "node:dgram";
import { readFileSync, statSync } from "node:fs";
import { get as httpGet } from "node:http";
import { criClient } from "../../../cli/clients/cri.ts";
import { writeImage } from "./oci-image.mjs";

const [cmd, ...args] = process.argv.slice(2);

function get(doc, expr) {
  let v = doc;
  for (const part of expr.match(/[^.[\]]+/g) ?? []) v = v?.[part];
  return v;
}

// getFresh: a GET on a connection of its own (no keep-alive pool), its body; 10 s at most.
function getFresh(url) {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { agent: false, timeout: 10_000 }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve(body));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
  });
}

// udpAsk: one datagram from a fresh socket, the first answer's text or undefined past timeoutMs.
function udpAsk(host, port, request, timeoutMs) {
  return new Promise((resolve) => {
    const sock = createSocket(host.includes(":") ? "udp6" : "udp4");
    const done = (v) => {
      clearTimeout(timer);
      sock.close();
      resolve(v);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    sock.on("message", (m) => done(m.toString().trim()));
    sock.on("error", () => done(undefined));
    sock.send(request, port, host);
  });
}

async function main() {
  switch (cmd) {
    case "cri-status": {
      const c = criClient(args[0]);
      const v = await c.version();
      const { conditions } = await c.status();
      // The kubelet needs RuntimeReady and NetworkReady; other conditions (containerd's
      // ContainerdHasNoDeprecationWarnings on a cgroup v1 host, say) are shown with their reason.
      const shown = conditions.map(
        (x) => `${x.type}=${x.status}${x.status ? "" : ` (${[x.reason, x.message].filter(Boolean).join(": ").slice(0, 300)})`}`,
      );
      console.log(`${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion}) ${shown.join(" ")}`);
      c.close();
      const ready = (t) => conditions.some((x) => x.type === t && x.status);
      return ready("RuntimeReady") && ready("NetworkReady") ? 0 : 1;
    }
    case "sandbox-image": {
      const c = criClient(args[0]);
      const { info } = await c.status(true);
      const cfg = JSON.parse(info.config ?? "{}");
      c.close();
      const image = cfg.sandboxImage ?? cfg.pinnedImages?.sandbox;
      if (!image) throw new Error(`the runtime does not report its sandbox image (config keys: ${Object.keys(cfg).join(", ")})`);
      console.log(image);
      return 0;
    }
    case "running": {
      const c = criClient(args[0]);
      const list = await c.listContainers();
      c.close();
      for (const x of list) if (x.state === "CONTAINER_RUNNING") console.log(x.id);
      return 0;
    }
    case "pod": {
      // The kubelet's own deadline for a runtime call (runtimeRequestTimeout, 2 min by default).
      const c = criClient(args[0], 120_000);
      const id = await c.runPodSandbox({
        name: "e2e-probe",
        uid: `e2e-probe-${process.pid}`,
        namespace: "default",
        hostname: "e2e-probe",
        cgroupParent: args[1] || undefined,
      });
      const st = await c.podSandboxStatus(id);
      console.log(`${st.state === "SANDBOX_READY" ? "ready" : st.state} ${st.ip}`);
      // Stop as the kubelet does: a failed StopPodSandbox is tried again (the kubelet's next pod
      // sync), up to three times; each failed try is shown on stderr, and the last one throws.
      for (let n = 1; ; n++) {
        try {
          await c.stopPodSandbox(id);
          break;
        } catch (e) {
          if (n === 3) throw e;
          console.error(`StopPodSandbox, try ${n} of 3: ${e.message}`);
        }
      }
      await c.removePodSandbox(id);
      c.close();
      return st.state === "SANDBOX_READY" && st.ip ? 0 : 1;
    }
    case "receipt-check": {
      const r = JSON.parse(readFileSync(args[0], "utf8"));
      const entries = [...r.files, ...Object.values(r.sets).flatMap((s) => s.binaries)];
      let bad = 0;
      for (const f of entries) {
        let got = "missing";
        try {
          const st = statSync(f.path);
          const h = createHash("sha256").update(readFileSync(f.path)).digest("hex");
          got =
            h !== f.sha256
              ? "hash differs"
              : (st.mode & 0o7777) !== f.mode
                ? `mode ${(st.mode & 0o7777).toString(8)} != ${f.mode.toString(8)}`
                : "ok";
        } catch {}
        if (got !== "ok") {
          bad++;
          console.log(`${got}: ${f.path}`);
        }
      }
      console.log(`${entries.length - bad}/${entries.length} files match the receipt`);
      return bad ? 1 : 0;
    }
    case "json": {
      const text = args[0] === "-" ? readFileSync(0, "utf8") : readFileSync(args[0], "utf8");
      const v = get(JSON.parse(text), args[1] ?? "");
      console.log(typeof v === "string" ? v : JSON.stringify(v));
      return v === undefined ? 1 : 0;
    }
    case "udp": {
      const [host, port, request, tries] = [args[0], Number(args[1]), args[2], Number(args[3] ?? 1)];
      const answers = [];
      for (let i = 0; i < tries; i++) answers.push(await udpAsk(host, port, request, 3000));
      const got = answers.filter((a) => a !== undefined);
      console.log(`${got.length}/${tries} answered: ${[...new Set(got)].join(" ")}`);
      return got.length === tries ? 0 : 1;
    }
    case "client-addresses": {
      const [url, n, c] = [args[0], Number(args[1]), Number(args[2] ?? 1)];
      const seen = new Map();
      let next = 0;
      const worker = async () => {
        while (next < n) {
          next++;
          const r = await getFresh(url).catch((e) => `error: ${e.code ?? e.message}`);
          const addr = r.startsWith("error:") ? r.trim() : r.trim().replace(/:\d+$/, "");
          seen.set(addr, (seen.get(addr) ?? 0) + 1);
        }
      };
      await Promise.all(Array.from({ length: c }, worker));
      for (const [addr, count] of [...seen].sort((a, b) => b[1] - a[1])) console.log(`${count} ${addr}`);
      return 0;
    }
    case "oci-image":
      writeImage({ busybox: args[0], out: args[1], name: args[2], cmd: args[3] ? JSON.parse(args[3]) : undefined });
      return 0;
    default:
      console.error(`unknown command ${cmd}`);
      return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`e2e-tool ${cmd}: ${e.message}`);
    process.exit(1);
  },
);
