// The layers of cli/ (README, "Layout"): data flows one way, facts → checks → plan → render → apply,
// and a module imports only from its own layer or from one below it, never from above, neither
// statically nor through import(). Every import of every file under cli/ is read with TypeScript's
// own scanner (comments and strings are not imports), resolved, and judged against the table below.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Every layer but the commands and the entry point: what those two may import. */
const BELOW_COMMANDS = [
  "base",
  "host",
  "fetch",
  "doctor",
  "plan",
  "render",
  "clients",
  "readiness",
  "apply",
  "agents",
  "supervisor",
  "inspect",
  "self",
];

/**
 * Each layer and the layers it may import from (besides itself). `base` is the small shared
 * kernel at the root of cli/ (errors, args, context, version, xdg, wait, completion) and cli/ui/;
 * `top` is the entry point (cli/main.ts, cli/bin.ts). fetch and doctor sit side by side, as do
 * inspect (reads the installed node) and self (the tool's own binary): neither imports the other.
 * `clients` talk to the node's peers (the Kubernetes API, CRI, RootlessKit) and know nothing of
 * what is done with their answers; `agents` are the loops the units run for days (the port
 * publisher, the overlay agent, the CSR approver): they use clients, plan, render and apply's file
 * primitives, and nothing above them, commands least of all. `readiness` waits on the node (the API
 * server's /readyz and the Node's Ready, the units while they start, the units' start gates)
 * through the clients, and changes nothing. `supervisor` is `rootless-k8s up`, which runs the node's
 * services where no systemd user manager does: it reads what render wrote and serves the calls of
 * clients/supervisor.ts.
 */
export const LAYERS: Record<string, readonly string[]> = {
  base: [],
  host: ["base"],
  fetch: ["base", "host"],
  doctor: ["base", "host"],
  plan: ["base", "host", "fetch", "doctor"],
  render: ["base", "host", "fetch", "doctor", "plan"],
  clients: ["base", "host", "plan"],
  readiness: ["base", "host", "plan", "clients"],
  apply: ["base", "host", "fetch", "doctor", "plan", "render", "clients", "readiness"],
  agents: ["base", "host", "plan", "render", "clients", "apply"],
  supervisor: ["base", "host", "plan", "render", "clients", "readiness", "apply"],
  inspect: ["base", "host", "fetch", "doctor", "plan", "render", "clients", "readiness", "apply", "agents"],
  self: ["base", "host", "fetch", "doctor", "plan", "render", "apply"],
  commands: BELOW_COMMANDS,
  top: [...BELOW_COMMANDS, "commands"],
};

/** The layer of a file given by its path from the repository root, or null outside cli/. */
export function layerOf(file: string): string | null {
  const parts = normalize(file).split("/");
  if (parts[0] !== "cli") return null;
  if (parts.length === 2) return parts[1] === "main.ts" || parts[1] === "bin.ts" ? "top" : "base";
  if (parts[1] === "ui") return "base";
  if (!(parts[1]! in LAYERS)) throw new Error(`${file}: cli/${parts[1]}/ is in no layer; add it to LAYERS`);
  return parts[1]!;
}

/** Every module specifier a source imports: import/export from, import "x", import("x"), import("x").T. */
export function importsOf(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** The upward (or sideways) imports of one file: "from → to" lines, none when it keeps to its layers. */
export function violations(file: string, source: string): string[] {
  const from = layerOf(file);
  if (from === null) return [];
  const bad: string[] = [];
  for (const spec of importsOf(source)) {
    if (!spec.startsWith(".")) continue; // node: built-ins and npm packages
    const target = normalize(join(dirname(file), spec));
    if (target.startsWith("assets/")) continue; // data shipped in the binary
    const to = layerOf(target);
    if (to === null) bad.push(`${file} imports ${spec}, outside cli/`);
    else if (to !== from && !LAYERS[from]!.includes(to)) bad.push(`${file} (${from}) imports ${spec} (${to})`);
  }
  return bad;
}

/** The specifiers of import("x") calls (not import types), from the syntax tree. */
export function dynamicImportsOf(source: string): string[] {
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    if (
      ts.isCallExpression(n) &&
      n.expression.kind === ts.SyntaxKind.ImportKeyword &&
      n.arguments[0] &&
      ts.isStringLiteralLike(n.arguments[0])
    )
      found.push(n.arguments[0].text);
    ts.forEachChild(n, visit);
  };
  visit(ts.createSourceFile("x.ts", source, ts.ScriptTarget.Latest, true));
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(REPO, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : /\.(ts|mts|js|mjs)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

describe("layering of cli/", () => {
  const files = sourceFiles("cli");

  it("finds the modules of every layer", () => {
    const seen = new Set(files.map((f) => layerOf(f)));
    for (const layer of Object.keys(LAYERS)) expect(seen, layer).toContain(layer);
    expect(files.length).toBeGreaterThan(100);
  });

  it("no module imports from a layer above its own, statically or through import()", () => {
    const bad = files.flatMap((f) => violations(f, readFileSync(join(REPO, f), "utf8")));
    expect(bad).toEqual([]);
  });

  it("import() of the project's own modules and of node: built-ins is left only to the command registry's lazy loaders", () => {
    const dynamic = files.flatMap((f) =>
      dynamicImportsOf(readFileSync(join(REPO, f), "utf8"))
        .filter((s) => s.startsWith(".") || s.startsWith("node:"))
        .map((s) => `${f}: import("${s}")`),
    );
    const loaders = dynamic.filter((d) => d.startsWith('cli/commands/registry.ts: import("./'));
    expect(dynamic.filter((d) => !loaders.includes(d))).toEqual([]);
    expect(loaders.length).toBeGreaterThan(5);
    expect(dynamicImportsOf(`const a = await import("./a"); type B = import("./b").B; import c from "./c";`)).toEqual(["./a"]);
  });

  // The judge itself: it must see what it is there to refuse, and nothing else.
  it("flags an upward import, static or dynamic, and ignores comments, strings and packages", () => {
    expect(violations("cli/apply/x.ts", `import type { InstallOptions } from "../commands/install";`)).toEqual([
      "cli/apply/x.ts (apply) imports ../commands/install (commands)",
    ]);
    expect(violations("cli/apply/x.ts", `const m = await import("../commands/install");`)).toHaveLength(1);
    expect(violations("cli/doctor/checks/x.ts", `type P = import("../../plan/plan").Plan;`)).toEqual([
      "cli/doctor/checks/x.ts (doctor) imports ../../plan/plan (plan)",
    ]);
    expect(violations("cli/fetch/x.ts", `import { check } from "../doctor/check";`)).toHaveLength(1); // sideways
    expect(violations("cli/self/x.ts", `export { nodeStatus } from "../inspect/status";`)).toHaveLength(1);
    // the rooms of the peers' clients and of the agents: a client never knows its callers, no agent
    // reaches a command, and apply never reaches an agent (it reads their files through plan's types)
    expect(violations("cli/clients/x.ts", `import { waitForReady } from "../readiness/readiness";`)).toHaveLength(1);
    expect(violations("cli/readiness/x.ts", `import { writeFileAtomic } from "../apply/files";`)).toHaveLength(1);
    expect(violations("cli/agents/x.ts", `import { spec } from "../commands/ports";`)).toHaveLength(1);
    expect(violations("cli/apply/x.ts", `import type { PortsState } from "../agents/ports-controller";`)).toHaveLength(1);
    expect(
      violations(
        "cli/agents/x.ts",
        `import { apiClient } from "../clients/kubernetes";\nimport { writeFileAtomic } from "../apply/files";\nimport type { PortsConfig } from "../render/ports";`,
      ),
    ).toEqual([]);
    expect(
      violations(
        "cli/apply/x.ts",
        `// import("../commands/install")\nconst s = 'import("../main")';\nimport YAML from "yaml";\nimport * as fs from "node:fs";`,
      ),
    ).toEqual([]);
    expect(
      violations(
        "cli/commands/x.ts",
        `import { applyPlan } from "../apply/install";\nimport { Context } from "../context";\nimport { out } from "../ui/output";`,
      ),
    ).toEqual([]);
    expect(relative(REPO, join(REPO, "cli/main.ts"))).toBe("cli/main.ts");
    expect(layerOf("cli/main.ts")).toBe("top");
  });
});
