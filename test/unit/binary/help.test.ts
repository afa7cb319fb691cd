// Help conventions of the command line, on the bundled CLI run as a child process: --help and -h on
// stdout with exit 0, `help <command>`, help winning over other flags, errors on stderr with exit 2.
import { describe, expect, it } from "vitest";
import { commands } from "../../../cli/commands/registry";
import { runCli } from "../../helpers/cli";

describe("help conventions", () => {
  it("`--help`, `-h` and `help` print the same command list on stdout and exit 0", async () => {
    const [long, short, word] = await Promise.all([runCli(["--help"]), runCli(["-h"]), runCli(["help"])]);
    for (const r of [long, short, word]) {
      expect(r.code).toBe(0);
      expect(r.stderr).toBe("");
    }
    expect(short.stdout).toBe(long.stdout);
    expect(word.stdout).toBe(long.stdout);
    expect(long.stdout).toMatch(/^Usage: rootless-k8s <command> \[options\]$/m);
    for (const c of commands) expect(long.stdout).toMatch(new RegExp(`^  ${c.name}\\b.*  ${escape(c.summary)}$`, "m"));
    expect(long.stdout).toContain("components (versions)");
    expect(long.stdout).toContain("ROOTLESS_K8S_NO_UPDATE_CHECK=1");
  });

  it("the command list shows each command's own summary (the registry keeps a copy so that it loads no command)", async () => {
    for (const c of commands) {
      const { spec } = await c.load();
      expect([c.name, c.summary]).toEqual([spec.name, spec.summary]);
    }
  });

  it("no arguments prints the help and exits 2 (bad usage)", async () => {
    const r = await runCli([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain("Usage: rootless-k8s <command>");
  });

  it("every command answers --help, -h and `help <command>` with its usage, options and -h line", async () => {
    for (const c of commands) {
      const [long, short, word] = await Promise.all([runCli([c.name, "--help"]), runCli([c.name, "-h"]), runCli(["help", c.name])]);
      expect(long.code, `${c.name} --help: ${long.stderr}`).toBe(0);
      expect(long.stdout).toMatch(new RegExp(`^Usage: rootless-k8s ${escape(c.name)}\\b`));
      expect(long.stdout).toMatch(/^Options:$/m);
      expect(long.stdout).toMatch(/^ {2}-h, --help +Show this help$/m);
      expect(short.stdout).toBe(long.stdout);
      expect(word.stdout).toBe(long.stdout);
    }
  });

  it("help wins over a bad flag, until `--`", async () => {
    const r = await runCli(["self-upgrade", "--no-such-flag", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: rootless-k8s self-upgrade");
    const after = await runCli(["completion", "--", "--help"]);
    expect(after.code).toBe(2);
    expect(after.stderr).toContain('error: shell must be one of bash, zsh, fish (got "--help")');
  });

  it("an alias shows the command's help and names the alias", async () => {
    const r = await runCli(["versions", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: rootless-k8s components\b/);
    expect(r.stdout).toContain("Also: rootless-k8s versions");
  });

  it("a mistyped command gets a suggestion on stderr and exit 2", async () => {
    const r = await runCli(["self-upgarde"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe('error: unknown command "self-upgarde"\nDid you mean `rootless-k8s self-upgrade`?\n');
    const far = await runCli(["zzzzzz"]);
    expect(far.stderr).toContain("Run `rootless-k8s --help` for the list of commands.");
    const flag = await runCli(["--frobnicate"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr.split("\n")[0]).toBe("error: unknown option --frobnicate");
  });

  it("a bad option prints one error line, the usage, and where to read more", async () => {
    const r = await runCli(["self-upgrade", "--to"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "error: option --to needs a value\nusage: rootless-k8s self-upgrade [--to VERSION] [--dry-run] [options]\nRun `rootless-k8s self-upgrade --help` for all options.\n",
    );
  });

  it("the command help lists environment variables and examples", async () => {
    const r = await runCli(["self-upgrade", "--help"]);
    expect(r.stdout).toMatch(/^Environment:\n {2}ROOTLESS_K8S_DOWNLOAD_URL +Release base/m);
    expect(r.stdout).toMatch(/^Examples:\n {2}rootless-k8s self-upgrade$/m);
  });

  it("`--version`, `-V` and `version` print one line", async () => {
    for (const a of ["--version", "-V", "version"]) {
      const r = await runCli([a]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^rootless-k8s \d+\.\d+\.\d+\S*\n$/);
    }
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
