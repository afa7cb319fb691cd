// Talking to the API server as a component does: the kubeconfig's server, CA and client pair,
// mutual TLS, JSON. Plus the systemd readiness notification the real daemons send.
import { spawn } from "node:child_process";
import { X509Certificate } from "node:crypto";
import * as https from "node:https";
import { parse } from "yaml";
import { die, log, readFileOrDie, checkPair, loadCert } from "./strict.mjs";

function pemFrom(component, data, file, what, base) {
  if (data) return Buffer.from(data, "base64");
  if (file) return readFileOrDie(component, file.startsWith("/") ? file : `${base}/${file}`, what);
  die(component, `kubeconfig has no ${what}`);
}

/** Loads a kubeconfig strictly: current context, cluster with CA, user with a client cert and key. */
export function loadKubeconfig(component, file) {
  const text = readFileOrDie(component, file, "kubeconfig").toString("utf8");
  let doc;
  try {
    doc = parse(text);
  } catch (e) {
    die(component, `kubeconfig "${file}": ${e.message}`);
  }
  if (doc?.kind !== "Config" || doc?.apiVersion !== "v1") die(component, `kubeconfig "${file}" is not a v1 Config`);
  const ctxName = doc["current-context"];
  if (!ctxName) die(component, `kubeconfig "${file}" has no current-context`);
  const ctx = doc.contexts?.find((c) => c.name === ctxName)?.context;
  if (!ctx) die(component, `kubeconfig "${file}": context "${ctxName}" not found`);
  const cluster = doc.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
  const user = doc.users?.find((u) => u.name === ctx.user)?.user;
  if (!cluster?.server) die(component, `kubeconfig "${file}": cluster "${ctx.cluster}" has no server`);
  if (!user) die(component, `kubeconfig "${file}": user "${ctx.user}" not found`);
  const base = file.replace(/\/[^/]*$/, "");
  const ca = pemFrom(component, cluster["certificate-authority-data"], cluster["certificate-authority"], "certificate-authority", base);
  const cert = pemFrom(component, user["client-certificate-data"], user["client-certificate"], "client-certificate", base);
  const key = pemFrom(component, user["client-key-data"], user["client-key"], "client-key", base);
  let caCert, clientCert;
  try {
    caCert = new X509Certificate(ca);
    clientCert = new X509Certificate(cert);
  } catch (e) {
    die(component, `kubeconfig "${file}": bad certificate data: ${e.message}`);
  }
  if (!clientCert.verify(caCert.publicKey)) {
    // A client cert need not come from the cluster CA in general, but in this node one CA signs all.
    die(component, `kubeconfig "${file}": client certificate "${clientCert.subject}" is not signed by the cluster CA`);
  }
  return { server: cluster.server, ca, cert, key, subject: clientCert.subject };
}

export function apiClient(kc) {
  const agent = new https.Agent({ ca: kc.ca, cert: kc.cert, key: kc.key, keepAlive: true });
  function request(method, path, body, contentType = "application/json") {
    return new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = https.request(
        new URL(path, kc.server),
        {
          method,
          agent,
          timeout: 10_000,
          headers: { accept: "application/json", ...(data ? { "content-type": contentType, "content-length": data.length } : {}) },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d) => (text += d));
          res.on("end", () => {
            let json = null;
            try {
              json = text ? JSON.parse(text) : null;
            } catch {}
            resolve({ status: res.statusCode, json, text });
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", reject);
      req.end(data);
    });
  }
  return { request, get: (p) => request("GET", p) };
}

/** Waits until the API server answers /readyz with 200, retrying like client-go does. */
export async function waitForApi(component, client, { attempts = 600, delayMs = 1000 } = {}) {
  let last = "";
  for (let i = 0; i < attempts; i++) {
    try {
      const r = await client.get("/readyz");
      if (r.status === 200) return;
      last = `HTTP ${r.status}`;
    } catch (e) {
      last = e.code ?? e.message;
    }
    await new Promise((r) => setTimeout(r, delayMs));
  }
  die(component, `the API server did not become ready: ${last}`);
}

/**
 * sd_notify(READY=1) when systemd asked for it (Type=notify sets NOTIFY_SOCKET). Node has no
 * datagram unix sockets, so a short-lived python3 helper sends it and stays alive a moment, so
 * systemd can still map the sender to this unit's cgroup (the known systemd-notify race).
 */
export function notifyReady(component) {
  const sock = process.env.NOTIFY_SOCKET;
  if (!sock) return;
  const py =
    "import os,socket,time\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\np=os.environ['NOTIFY_SOCKET']\np='\\0'+p[1:] if p.startswith('@') else p\ns.connect(p)\ns.send(('READY=1\\nMAINPID=%s\\n'%os.environ['RK8S_DOUBLE_PID']).encode())\ntime.sleep(1)\n";
  const child = spawn("python3", ["-c", py], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, RK8S_DOUBLE_PID: String(process.pid) },
  });
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  child.on("close", (code) => {
    if (code !== 0) die(component, `sd_notify READY=1 failed: ${err.trim() || `python3 exit ${code}`}`);
  });
  child.on("error", (e) => die(component, `sd_notify READY=1 failed: ${e.message}`));
}

export { checkPair, loadCert };

/**
 * What controller-manager, scheduler and kube-proxy do first: authenticate with their own
 * identity and list nodes. A refusal (401/403) is fatal, as a component with the wrong identity is
 * useless; an API server that is not up yet is waited for.
 */
export async function watchNodesAs(component, kubeconfigPath, expectedUser) {
  const kc = loadKubeconfig(component, kubeconfigPath);
  const cn = /CN=([^\n]+)/.exec(kc.subject)?.[1] ?? "";
  if (cn !== expectedUser) die(component, `kubeconfig "${kubeconfigPath}" authenticates as "${cn}", expected "${expectedUser}"`);
  const client = apiClient(kc);
  await waitForApi(component, client);
  const tick = async () => {
    try {
      const r = await client.get("/api/v1/nodes");
      if (r.status === 401 || r.status === 403) die(component, `listing nodes as ${cn}: HTTP ${r.status} ${r.json?.message ?? ""}`);
      if (r.status !== 200) log(component, "W", `listing nodes: HTTP ${r.status}`);
    } catch (e) {
      log(component, "W", `listing nodes: ${e.code ?? e.message}`);
    }
  };
  await tick();
  log(component, "I", `connected to ${kc.server} as ${cn}`);
  setInterval(tick, 10_000);
  return client;
}
