export function readReasons(file: string): Map<string, string>;
export function readNames(file: string): string[];
