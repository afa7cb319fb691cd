// `rootless-k8s completion bash|zsh|fish`, loaded into the real shells: bash's completion function
// called as readline would, fish's `complete -C`, and zsh driven through a terminal in tmux.
import { execFileSync, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { CommandSpec } from "../../../cli/args";
import { commands } from "../../../cli/commands/registry";
import { runCli } from "../../helpers/cli";
import { hasCommand } from "../../helpers/process";
import { tempDir } from "../../helpers/temp";

let dir: string;
const scripts: Record<string, string> = {};
let specs: { name: string; aliases: string[]; spec: CommandSpec }[];

beforeAll(async () => {
  dir = tempDir("rk8s-completion-");
  for (const shell of ["bash", "zsh", "fish"]) {
    const r = await runCli(["completion", shell]);
    expect(r.code, r.stderr).toBe(0);
    scripts[shell] = join(dir, `completion.${shell}`);
    writeFileSync(scripts[shell], r.stdout);
  }
  specs = await Promise.all(commands.map(async (c) => ({ name: c.name, aliases: c.aliases ?? [], spec: (await c.load()).spec })));
});

/** The long and short flags a command's spec defines, plus -h/--help. */
const flagsOf = (spec: CommandSpec) => [
  ...Object.entries(spec.options).flatMap(([long, o]) => [`--${long}`, ...(o.short ? [`-${o.short}`] : [])]),
  "--help",
  "-h",
];

describe("bash completion", () => {
  /** COMPREPLY for the words typed so far (the last one is being completed). */
  const complete = (...words: string[]) =>
    execFileSync(
      "bash",
      [
        "-c",
        `source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _rootless_k8s; printf '%s\\n' "\${COMPREPLY[@]}"`,
        scripts.bash!,
        ...words,
      ],
      {
        encoding: "utf8",
      },
    )
      .split("\n")
      .filter(Boolean);

  it("is clean under shellcheck", () => {
    expect(execFileSync("shellcheck", ["--shell=bash", scripts.bash!], { encoding: "utf8" })).toBe("");
  });

  it("completes command names and aliases", () => {
    expect(complete("rootless-k8s", "self")).toEqual(["self-upgrade"]);
    expect(complete("rootless-k8s", "")).toEqual(
      expect.arrayContaining([...commands.map((c) => c.name), "versions", "--help", "--version"]),
    );
  });

  it("completes every flag of every command from its spec, also under an alias", () => {
    for (const s of specs) {
      for (const name of [s.name, ...s.aliases]) expect(complete("rootless-k8s", name, "-").sort()).toEqual(flagsOf(s.spec).sort());
    }
  });

  it("completes fixed choices and leaves free values alone", () => {
    expect(complete("rootless-k8s", "completion", "")).toEqual(["bash", "zsh", "fish"]);
    expect(complete("rootless-k8s", "completion", "z")).toEqual(["zsh"]);
    expect(complete("rootless-k8s", "self-upgrade", "--to", "")).toEqual([]);
    for (const s of specs) {
      for (const [long, o] of Object.entries(s.spec.options)) {
        if (o.choices) expect(complete("rootless-k8s", s.name, `--${long}`, "")).toEqual([...o.choices]);
      }
    }
  });
});

describe("fish completion", () => {
  const complete = (line: string) =>
    execFileSync("fish", ["--no-config", "-c", `source $argv[1]; complete -C"${line}"`, scripts.fish!], {
      encoding: "utf8",
      env: { ...process.env, HOME: dir },
    })
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split("\t"));

  it.skipIf(!hasCommand("fish"))("completes commands with their summaries, every long flag of every command, and choices", () => {
    expect(complete("rootless-k8s self")).toEqual([["self-upgrade", "Replace this binary with a newer verified release"]]);
    for (const s of specs) {
      const got = complete(`rootless-k8s ${s.name} --`).map((l) => l[0]);
      expect(got.sort(), s.name).toEqual(
        flagsOf(s.spec)
          .filter((f) => f.startsWith("--"))
          .sort(),
      );
    }
    expect(
      complete("rootless-k8s completion ")
        .map((l) => l[0])
        .sort(),
    ).toEqual(["bash", "fish", "zsh"]);
  });
});

describe("zsh completion", () => {
  it("parses", () => {
    expect(spawnSync("zsh", ["-n", scripts.zsh!]).status).toBe(0);
  });

  it.skipIf(!hasCommand("tmux") || !hasCommand("zsh"))("completes in an interactive zsh, driven through tmux", async () => {
    const home = tempDir("rk8s-zsh-");
    writeFileSync(join(home, ".zshrc"), `PS1='%% '\nautoload -U compinit && compinit -u\nsource ${scripts.zsh}\n`);
    const session = `rk8s-zsh-${process.pid}`;
    const tmux = (...args: string[]) => execFileSync("tmux", args, { encoding: "utf8" });
    const screen = () => tmux("capture-pane", "-p", "-t", session);
    const waitFor = async (re: RegExp) => {
      for (let i = 0; i < 100; i++) {
        if (re.test(screen())) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`screen never matched ${re}:\n${screen()}`);
    };
    tmux(
      "new-session",
      "-d",
      "-s",
      session,
      "-x",
      "150",
      "-y",
      "40",
      `env -i HOME=${home} ZDOTDIR=${home} TERM=xterm PATH=/usr/bin:/bin zsh -i`,
    );
    try {
      await waitFor(/^% ?$/m);
      tmux("send-keys", "-t", session, "rootless-k8s self-up", "Tab");
      await waitFor(/^% rootless-k8s self-upgrade ?$/m);
      tmux("send-keys", "-t", session, "-l", "--", "--dr");
      tmux("send-keys", "-t", session, "Tab");
      await waitFor(/^% rootless-k8s self-upgrade --dry-run ?$/m);
      tmux("send-keys", "-t", session, "C-u", "rootless-k8s completion ", "Tab");
      await waitFor(/^bash +fish +zsh *$/m);
    } finally {
      tmux("kill-session", "-t", session);
    }
  });
});
