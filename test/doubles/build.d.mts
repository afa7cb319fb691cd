// Types of build.mjs, for the TypeScript tests that build the doubles.
export declare const DOUBLES: Record<string, string>;
export declare function buildDoubles(o: { out: string; version: string; node: string; only?: string[]; fault?: string }): Promise<string[]>;
