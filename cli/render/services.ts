// The node's services as data: what each one runs, in what order, how it is restarted and stopped.
// One source for both ways a node runs (cli/plan/supervisor.ts): units.ts renders them as systemd
// user units, and `rootless-k8s up` (cli/supervisor/) reads them as the JSON files rendered here,
// one per service plus the target's, in the folder the plan names (paths.unitDir). Neither decides
// an order, a command or an environment of its own.
import type { VariableArg } from "./systemd";

/** A word of a command line: a literal, or a variable expanded into words when it runs ($MAINPID, $KUBELET_EXTRA_ARGS). */
export type Word = string | VariableArg;

export interface NodeService {
  name: string;
  description: string;
  documentation: string;
  /** null: active once started (Type=simple). Else active once this unix socket accepts (systemd: the runtime's READY=1). */
  ready: { socket: string } | null;
  /** Run in turn before the service (its start gate, the runtime folder), each to success (ExecStartPre=). */
  pre: Word[][];
  exec: Word[];
  /** Run once the service is ready (ExecStartPost=), with $MAINPID. */
  post: Word[][];
  /** Started with it, and it does not start without them (Requires=). */
  requires: string[];
  /** Started before it (Wants= and After=). */
  after: string[];
  /** Stopped and restarted with these (PartOf=). */
  partOf: string[];
  restartSec: number;
  startTimeoutSec: number | null;
  stopTimeoutSec: number;
  /** control-group: SIGTERM to every process of the service; mixed: to the main one, SIGKILL to the rest after it. */
  killMode: "control-group" | "mixed";
  /** Its starts within intervalSec beyond burst count as a failure that gives up (StartLimit*). */
  startLimit: { intervalSec: number; burst: number };
  /** Skipped (not failed) unless this path exists (ConditionPathExists=). */
  condition: string | null;
  /** KEY=VALUE files read at each start, in order; an optional one may be missing (EnvironmentFile=-). */
  envFiles: { path: string; optional: boolean }[];
  /** The file its output is appended to (null: the journal). */
  log: string | null;
  /** Made while the service is being stopped on purpose (the owner: its network watch tells a stop from a fault). */
  stopMarker: string | null;
}

/** A command `up` runs every `everySec` seconds while the node runs (the log rotation timer's). */
export interface NodeTimer {
  name: string;
  exec: Word[];
  everySec: number;
  envFiles: { path: string; optional: boolean }[];
  log: string | null;
}

/** The target: the node as a whole, its members in start order. */
export interface NodeTarget {
  schema: 1;
  name: string;
  node: string;
  members: string[];
  timers: NodeTimer[];
}

export const SERVICE_SPEC_SUFFIX = ".json";

/** The file of one service, timer or target under `up`: the unit's name and `.json`. */
export function serviceSpecFile(name: string): string {
  return `${name}${SERVICE_SPEC_SUFFIX}`;
}

export function renderServiceSpec(s: NodeService | NodeTarget): string {
  return `${JSON.stringify(s, null, 2)}\n`;
}
