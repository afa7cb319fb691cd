export interface JunitCase {
  name: string;
  status: string;
  seconds: number;
  message: string;
}
export interface Row {
  name: string;
  status: "passed" | "failed" | "skipped";
  reason?: string;
  expected?: boolean;
  seconds?: number;
}
export function readJunit(xml: string): JunitCase[];
export function summarize(args: {
  cases: JunitCase[];
  names: string[];
  skips: Map<string, string>;
  expected?: Map<string, string>;
}): { rows: Row[]; passed: number; failed: number; skipped: number; unexpected: Row[] };
