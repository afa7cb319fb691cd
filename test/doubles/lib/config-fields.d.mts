// Types of config-fields.mjs, for the TypeScript tests that check rendered configs with the doubles' decoder.
export declare function unknownFields(doc: unknown, rootType: "KubeletConfiguration" | "KubeProxyConfiguration"): string[];
export declare function unknownFeatureGates(gates: Record<string, unknown> | undefined): string[];
export declare const enums: Record<string, unknown>;
