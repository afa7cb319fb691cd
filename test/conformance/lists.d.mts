export function readReasons(file: string): Map<string, string>;
export function readNames(file: string): string[];
export function focusRegex(names: string[]): string;
export function shardOf(names: string[], spec: string): string[];
