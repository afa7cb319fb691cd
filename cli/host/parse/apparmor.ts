// AppArmor profiles that let a binary create user namespaces: a profile whose attachment path
// matches the binary and whose body grants `userns,` (Ubuntu 23.10+ restricts unprivileged user
// namespaces to such profiles when kernel.apparmor_restrict_unprivileged_userns = 1).

export interface UsernsProfile {
  /** Attachment as written: "/usr/bin/rootlesskit", "/home/*\/bin/rootlesskit", "@{HOME}/bin/rootlesskit". */
  attach: string;
  /** The profile file it was found in. */
  file: string;
}

/** A profile header: [profile NAME] ATTACHMENT [flags=(...)] {  (rules such as "@{exec_path} mr," are not headers). */
const HEADER = /^\s*(?:profile\s+(?:"[^"]*"|\S+)\s+)?("[^"]+"|\/\S*|@\{[A-Za-z_]+\}\S*)\s+(?:flags\s*=\s*\([^)]*\)\s*)?\{\s*(?:#.*)?$/;

/** Profiles in one file that grant `userns` (file-level granularity: the grant must be in the file). */
export function usernsProfilesIn(text: string, file: string): UsernsProfile[] {
  if (!/^\s*userns\s*,/m.test(text)) return [];
  const out: UsernsProfile[] = [];
  for (const line of text.split("\n")) {
    if (/^\s*#/.test(line)) continue;
    const m = HEADER.exec(line);
    if (m) out.push({ attach: m[1]!.replace(/^"|"$/g, ""), file });
  }
  return out;
}

/** Variables from the stock tunables (tunables/home: @{HOMEDIRS}=/home/, @{HOME}=@{HOMEDIRS}/*\/ /root/). */
const TUNABLES: Record<string, string[]> = {
  HOME: ["/home/*", "/root"],
  HOMEDIRS: ["/home"],
};

function escapeRe(s: string): string {
  return s.replace(/[.+^$()|[\]\\]/g, "\\$&");
}

/** AppArmor glob -> RegExp: ** any path, * one segment part, ? one char, {a,b} alternation, @{VAR} tunables. */
export function attachRegExp(attach: string): RegExp {
  let s = attach;
  for (const [k, vals] of Object.entries(TUNABLES)) s = s.split(`@{${k}}`).join(vals.length > 1 ? `{${vals.join(",")}}` : vals[0]!);
  let re = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "*" && s[i + 1] === "*") {
      re += ".*";
      i++;
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "{") re += "(?:";
    else if (c === "}") re += ")";
    else if (c === ",") re += "|";
    else re += escapeRe(c);
  }
  return new RegExp(`^${re.replace(/\/+/g, "/")}$`);
}

export function profileCovers(p: UsernsProfile, binary: string): boolean {
  if (p.attach.includes("@{") && !/@\{(HOME|HOMEDIRS)\}/.test(p.attach)) return false;
  try {
    return attachRegExp(p.attach).test(binary);
  } catch {
    return false;
  }
}

/** The profile file name RootlessKit suggests for a binary: the path with "/" turned into ".". */
export function profileFileName(binary: string): string {
  return binary
    .replace(/^\/+/, "")
    .replace(/[^A-Za-z0-9_.-]/g, ".")
    .replace(/\//g, ".");
}
