// `rootless-k8s up`: the node's services run as children of one process, from the same definitions
// systemd would run (cli/render/services.ts), for hosts where no systemd user manager runs.
//   - A start starts every member once what it comes after is active, in parallel where nothing
//     orders them (systemd's After=/Wants=/Requires=); a service waits in its own start gate.
//   - A service that exits is restarted with backoff (service.ts); one that keeps failing stops the
//     whole node and the supervisor, with its last log lines.
//   - A service the others are PartOf= (the namespace owner) that exits takes them down first, and
//     they start again once it is back; once it is up, whatever a failed start of it dropped starts too.
//   - A stop stops members once everything that comes after them has stopped (reverse order, the
//     owner last); when no member runs any more, the supervisor exits.
//   - The control socket (HTTP on a unix socket, clients/supervisor.ts) serves the calls the
//     commands make of systemd: start, stop, restart, reset-failed, reload, state.
import { spawn } from "node:child_process";
import { closeSync, openSync, promises as fsp } from "node:fs";
import * as http from "node:http";
import { UP_API, type UpStopAnswer, type UpUnits, type UpUnitsRequest } from "../clients/supervisor";
import { lastLogLines } from "../clients/systemd";
import type { NodeService, NodeTimer } from "../render/services";
import { expandWords, readEnvironment } from "./environment";
import { Service } from "./service";
import { loadSpec, type NodeSpec } from "./spec";
import { recordGroups } from "../clients/process-groups";

export interface SupervisorOptions {
  /** The folder of the service files (plan.paths.unitDir) and the target's name. */
  dir: string;
  target: string;
  socket: string;
  /** Where the running services' groups are recorded, for the next `up` after a kill (leftovers.ts). */
  groups?: string;
  env: NodeJS.ProcessEnv;
  /** Lines for the supervisor's own output (its log when detached). */
  say: (line: string) => void;
}

export interface Supervisor {
  /** Resolves with the exit status once every service has stopped (a stop, a signal, or a service that gave up). */
  done: Promise<number>;
  /** Serves the control socket; resolves once it listens. */
  listen(): Promise<void>;
  startAll(): void;
  stopAll(): Promise<void>;
  units(): UpUnits;
}

export async function createSupervisor(o: SupervisorOptions): Promise<Supervisor> {
  let spec: NodeSpec = await loadSpec(o.dir, o.target);
  const services = new Map<string, Service>();
  const timers: NodeJS.Timeout[] = [];
  let finish: (code: number) => void = () => {};
  const done = new Promise<number>((r) => (finish = r));
  let stopping = false;
  // A stop left nothing running: the supervisor is on its way out (the target reads inactive).
  let exiting = false;
  let exitCode = 0;
  // Services stopped because one they are part of went down, to start again once it is back.
  const heldDown = new Map<string, Set<string>>();

  const order = () => spec.target.members.filter((m) => services.has(m));
  const svc = (name: string) => services.get(name);
  const deps = (s: NodeService) => [...new Set([...s.requires, ...s.after])].filter((d) => services.has(d));
  const dependents = (name: string) => order().filter((m) => deps(svc(m)!.spec).includes(name) || svc(m)!.spec.partOf.includes(name));

  const add = (s: NodeService) => {
    const service = new Service(s, o.env);
    services.set(s.name, service);
    service.on("exited", (willRestart) => {
      if (stopping) return;
      o.say(`${s.name} exited${willRestart ? "; restarting it" : ""}`);
      void takeDown(s.name);
    });
    service.on("active", () => {
      if (stopping) return;
      const held = heldDown.get(s.name) ?? new Set<string>();
      heldDown.delete(s.name);
      // An owner (what others are PartOf=) that is up starts the members not running, as its
      // ExecStartPost= does under systemd: a failed start of it dropped the starts waiting for it.
      const owner = order().some((m) => svc(m)!.spec.partOf.includes(s.name));
      for (const d of order().filter((m) => held.has(m) || (owner && !svc(m)!.running && !starting.has(m)))) void startOne(d);
    });
    service.on("gaveUp", () => void gaveUp(s.name));
    service.on("main", () => {
      if (o.groups)
        recordGroups(
          o.groups,
          [...services.values()].map((x) => x.state),
        );
    });
  };
  for (const name of spec.target.members) add(spec.services.get(name)!);

  /** The services PartOf= this one stop with it, and start again once it is active. */
  async function takeDown(name: string) {
    const part = order().filter((m) => svc(m)!.spec.partOf.includes(name) && svc(m)!.running);
    if (!part.length) return;
    heldDown.set(name, new Set([...(heldDown.get(name) ?? []), ...part]));
    await stopSome(part);
    if (svc(name)?.state.activeState === "active") {
      heldDown.delete(name);
      for (const d of part) void startOne(d);
    }
  }

  async function gaveUp(name: string) {
    if (stopping) return;
    const s = svc(name)!;
    const tail = s.spec.log ? ((await lastLogLines(s.spec.log, 15)) ?? []) : [];
    o.say(
      `${name} failed ${s.spec.startLimit.burst} times in a row: stopping the node. Its last lines${s.spec.log ? ` (${s.spec.log})` : ""}:`,
    );
    for (const l of tail) o.say(`  ${l}`);
    exitCode = 1;
    await stopAllAndExit();
  }

  const starting = new Map<string, Promise<boolean>>();
  function startOne(name: string): Promise<boolean> {
    const have = starting.get(name);
    if (have) return have;
    const job = (async () => {
      const s = svc(name);
      if (!s) return false;
      // What it requires starts with it; what it comes after is waited for when it is started too.
      for (const r of s.spec.requires) if (services.has(r) && !svc(r)!.running) void startOne(r);
      const waits = deps(s.spec).filter((d) => svc(d)!.running || starting.has(d) || s.spec.requires.includes(d));
      const ok = await Promise.all(waits.map((d) => startOne(d)));
      const required = s.spec.requires.filter((r) => services.has(r));
      if (required.some((r) => !ok[waits.indexOf(r)])) return false;
      if (stopping) return false;
      return s.start();
    })();
    starting.set(name, job);
    void job.finally(() => starting.delete(name));
    return job;
  }

  /** Stops these, each once the ones that come after it (among those running) have stopped. */
  async function stopSome(names: string[]): Promise<void> {
    const jobs = new Map<string, Promise<void>>();
    const set = new Set(names);
    const stopOne = (name: string): Promise<void> => {
      const have = jobs.get(name);
      if (have) return have;
      const job = (async () => {
        await Promise.all(
          dependents(name)
            .filter((d) => set.has(d))
            .map(stopOne),
        );
        await svc(name)!.stop();
      })();
      jobs.set(name, job);
      return job;
    };
    await Promise.all(names.filter((n) => services.has(n)).map(stopOne));
  }

  function startAll() {
    for (const m of order()) void startOne(m);
    for (const t of spec.target.timers) timers.push(runEvery(t, o.env, o.say));
  }

  async function stopAll() {
    stopping = true;
    for (const t of timers.splice(0)) clearInterval(t);
    await stopSome(order());
    // Services a reload dropped from the target, still running from before.
    await stopSome([...services.keys()]);
  }

  async function stopAllAndExit() {
    await stopAll();
    server?.close();
    server?.closeAllConnections();
    await fsp.rm(o.socket, { force: true });
    finish(exitCode);
  }

  // The target is the supervisor itself: active while it runs the node.
  const units = (): UpUnits => ({
    pid: process.pid,
    units: [
      exiting
        ? { unit: o.target, activeState: "inactive", subState: "dead", result: "success", mainPid: 0, nRestarts: 0 }
        : {
            unit: o.target,
            activeState: stopping ? "deactivating" : "active",
            subState: "active",
            result: "success",
            mainPid: process.pid,
            nRestarts: 0,
          },
      ...[...services.values()].map((s) => s.state),
      // A timer is active (waiting) while the supervisor runs its command every period.
      ...spec.target.timers.map((t) => ({
        unit: t.name,
        activeState: timers.length && !stopping ? "active" : "inactive",
        subState: timers.length && !stopping ? "waiting" : "dead",
        result: "success",
        mainPid: 0,
        nRestarts: 0,
      })),
    ],
  });

  async function reload() {
    const next = await loadSpec(o.dir, o.target);
    for (const [name, s] of next.services) {
      const have = svc(name);
      if (!have) add(s);
      else if (have.running) have.next = s;
      else have.spec = s;
    }
    for (const [name, s] of services) if (!next.services.has(name) && !s.running) services.delete(name);
    spec = next;
  }

  const expand = (names: string[]) => names.flatMap((n) => (n === o.target ? order() : services.has(n) ? [n] : []));

  let server: http.Server | null = null;
  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    let text = "";
    for await (const c of req) text += c;
    let names: string[] = [];
    try {
      names = text ? expand(((JSON.parse(text) as Partial<UpUnitsRequest>).units ?? []).map(String)) : [];
    } catch {
      return send(400, { error: "the body is not JSON" });
    }
    if (req.method === "GET" && req.url === UP_API.units) return send(200, units());
    if (req.method !== "POST") return send(405, { error: "GET /v1/units, or POST" });
    if (stopping) return send(409, { error: "the node is stopping" });
    switch (req.url) {
      case UP_API.start:
        for (const n of names) void startOne(n);
        return send(202, {});
      case UP_API.restart: {
        // What is PartOf= a restarted service restarts with it (systemd's PartOf=).
        const all = [
          ...new Set([...names, ...order().filter((m) => svc(m)!.running && svc(m)!.spec.partOf.some((p) => names.includes(p)))]),
        ];
        await stopSome(all);
        for (const n of all) void startOne(n);
        return send(202, {});
      }
      case UP_API.stop:
        await stopSome(names);
        // Nothing runs any more: the supervisor's work is done, once this answer is out.
        if (![...services.values()].some((s) => s.running)) {
          exiting = true;
          // Once the answer is out, or the client is gone (it may have given up waiting).
          let once = false;
          const exit = () => {
            if (!once) void stopAllAndExit();
            once = true;
          };
          res.once("finish", exit);
          res.once("close", exit);
        }
        return send(200, { exiting, pid: process.pid } satisfies UpStopAnswer);
      case UP_API.resetFailed:
        for (const n of names) svc(n)?.resetFailed();
        return send(200, {});
      case UP_API.reload:
        try {
          await reload();
        } catch (e) {
          return send(500, { error: (e as Error).message });
        }
        return send(200, {});
      default:
        return send(404, { error: `no ${req.url}` });
    }
  }

  return {
    done,
    startAll,
    stopAll: stopAllAndExit,
    units,
    async listen() {
      await fsp.rm(o.socket, { force: true });
      server = http.createServer((req, res) => {
        handle(req, res).catch((e: Error) => {
          if (!res.headersSent) res.writeHead(500);
          res.end(JSON.stringify({ error: e.message }));
        });
      });
      const previous = process.umask(0o177);
      try {
        await new Promise<void>((resolve, reject) => {
          server!.once("error", reject);
          server!.listen(o.socket, () => resolve());
        });
      } finally {
        process.umask(previous);
      }
    },
  };
}

/** A timer: its command every `everySec` seconds (the first after one period), never two at once. */
function runEvery(t: NodeTimer, env: NodeJS.ProcessEnv, say: (l: string) => void): NodeJS.Timeout {
  let busy = false;
  return setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      const e = { ...env, ...(await readEnvironment(t.envFiles).catch(() => ({}))) };
      const argv = expandWords(t.exec, e);
      const out = t.log ? openSync(t.log, "a", 0o600) : "ignore";
      try {
        const p = spawn(argv[0]!, argv.slice(1), { env: e, stdio: ["ignore", out, out] });
        p.once("error", (err) => say(`${t.name}: ${err.message}`));
        p.once("close", () => (busy = false));
      } finally {
        if (typeof out === "number") closeSync(out);
      }
    })().catch((err: Error) => {
      // Tried again at the next period (its log folder gone, no process slot left).
      say(`${t.name}: ${err.message}`);
      busy = false;
    });
  }, t.everySec * 1000);
}
