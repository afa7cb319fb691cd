export interface ConformanceEntry {
  testname: string;
  codename: string;
  file: string;
}
export function chosen(t: ConformanceEntry): boolean;
export function focusText(list: ConformanceEntry[], b: { module: string; version: string }): string;
export function suiteVersion(): { module: string; version: string };
export function upstreamList(b?: { module: string; version: string }): ConformanceEntry[];
export function sigOf(codename: string): string;
