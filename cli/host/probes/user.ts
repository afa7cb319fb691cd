// The evaluated user: who, where their home and runtime dir are, their subordinate id ranges, and
// whether newuidmap/newgidmap can map them (setuid-root or file capabilities).
import type { Host } from "../host";
import type { IdMapBinary, SubIdFacts, SubIdRange, UserFacts } from "../facts";
import { parseGroup, parsePasswd, type PasswdEntry } from "../parse/passwd";
import { capabilityGranted, parseGetcap } from "../parse/procfs";
import { inRanges, isOwnEntry, parseGetsubids, parseSubIdFile, rangesOverlap, type SubIdEntry } from "../parse/subid";
import { findTool, outputOf, probeRun, type EvaluatedUser, type ProbeContext } from "./context";

/** Looks NAME or UID up in /etc/passwd, then through NSS (`getent passwd`) when commands may run. */
async function lookupUser(host: Host, passwd: PasswdEntry[], spec: string): Promise<PasswdEntry | null> {
  const numeric = /^\d+$/.test(spec);
  const hit = passwd.find((e) => (numeric ? e.uid === Number(spec) : e.name === spec));
  if (hit) return hit;
  if (!host.canRun) return null;
  const r = await host.run("getent", ["passwd", spec], { timeoutMs: 1000 });
  return r.code === 0 ? (parsePasswd(r.stdout)[0] ?? null) : null;
}

export class UnknownUserError extends Error {}

/** The user to evaluate: --user NAME|UID, else the one running this process. */
export async function resolveUser(host: Host, spec: string | undefined): Promise<EvaluatedUser> {
  const passwd = parsePasswd(await host.readText("/etc/passwd"));
  const self = host.ids.uid;
  if (spec !== undefined && spec !== "") {
    const e = await lookupUser(host, passwd, spec);
    if (!e) {
      if (!/^\d+$/.test(spec)) throw new UnknownUserError(`no user "${spec}" in /etc/passwd or NSS`);
      const uid = Number(spec);
      return { name: spec, uid, gid: uid, home: null, other: uid !== self };
    }
    return { name: e.name, uid: e.uid, gid: e.gid, home: e.home || null, other: e.uid !== self };
  }
  const e = await lookupUser(host, passwd, String(self));
  const name = e?.name ?? host.env.USER ?? host.env.LOGNAME ?? String(self);
  return { name, uid: self, gid: e?.gid ?? host.ids.gid, home: host.env.HOME || e?.home || null, other: false };
}

const SUBID_BLOCK = 65536;

/** Where a new 65536-id range fits: above every existing range, aligned, never below 100000. */
export function nextFreeStart(entries: readonly SubIdEntry[]): number {
  const top = Math.max(100000, ...entries.map((e) => e.start + e.count));
  return Math.ceil(top / SUBID_BLOCK) * SUBID_BLOCK;
}

function subIdFacts(
  file: string,
  entries: SubIdEntry[] | null,
  user: EvaluatedUser,
  realIds: { name: string; id: number }[],
  nss: SubIdEntry[] | null,
): SubIdFacts {
  const all = entries ?? [];
  const own = all.filter((e) => isOwnEntry(e, user.name, user.uid));
  const useNss = own.length === 0 && !!nss && nss.length > 0;
  const chosen = useNss ? nss! : own;
  const ranges: SubIdRange[] = chosen.map((e) => ({ start: e.start, count: e.count }));
  const others = all.filter((e) => !isOwnEntry(e, user.name, user.uid));
  return {
    file: entries === null ? null : file,
    ranges,
    matchedBy: useNss ? "name" : own.length === 0 ? null : own.some((e) => e.owner === user.name) ? "name" : "uid",
    total: ranges.reduce((n, r) => n + r.count, 0),
    overlapsOtherUsers: others
      .filter((o) => ranges.some((r) => rangesOverlap(r, o)))
      .map((o) => ({ owner: o.owner, range: { start: o.start, count: o.count } })),
    overlapsRealIds: realIds.filter((x) => x.id !== user.uid && inRanges(x.id, ranges)),
    source: ranges.length === 0 ? null : useNss ? "getsubids" : "file",
    nextFreeStart: nextFreeStart(all),
  };
}

/** `getsubids [-g] NAME` (shadow >= 4.11) when the files have no entry: ranges from SSSD/LDAP. */
async function nssSubIds(ctx: ProbeContext, group: boolean): Promise<SubIdEntry[] | null> {
  const tool = await findTool(ctx.host, "getsubids");
  if (!tool) return null;
  const r = await probeRun(ctx, tool, group ? ["-g", ctx.user.name] : [ctx.user.name], 1000);
  return r.code === 0 ? parseGetsubids(r.stdout) : null;
}

async function idMapBinaries(ctx: ProbeContext): Promise<[IdMapBinary, IdMapBinary]> {
  const { host } = ctx;
  const [uidPath, gidPath, getcap] = await Promise.all([
    findTool(host, "newuidmap"),
    findTool(host, "newgidmap"),
    findTool(host, "getcap"),
  ]);
  const present = [uidPath, gidPath].filter((p): p is string => !!p);
  let caps: Map<string, string> | null = null;
  if (getcap && present.length) {
    const r = await probeRun(ctx, getcap, present, 1000);
    caps = r.code === 0 || (r.code !== null && r.stdout) ? parseGetcap(outputOf(r)) : null;
  }
  const one = async (p: string | null, cap: string): Promise<IdMapBinary> => {
    if (!p) return { path: null, setuidRoot: false, capabilities: null, capabilitiesKnown: false, privileged: false };
    const st = await host.stat(p);
    const setuidRoot = !!st && st.uid === 0 && (st.mode & 0o4000) !== 0;
    const c = caps?.get(p) ?? null;
    return {
      path: p,
      setuidRoot,
      capabilities: c,
      capabilitiesKnown: caps !== null || setuidRoot,
      privileged: setuidRoot || capabilityGranted(c, cap),
    };
  };
  return Promise.all([one(uidPath, "cap_setuid"), one(gidPath, "cap_setgid")]);
}

async function runtimeDir(ctx: ProbeContext): Promise<UserFacts["runtimeDir"]> {
  const { host, user } = ctx;
  const fromEnv = !user.other && !!host.env.XDG_RUNTIME_DIR;
  const p = fromEnv ? host.env.XDG_RUNTIME_DIR! : `/run/user/${user.uid}`;
  const st = await host.stat(p);
  return {
    path: p,
    fromEnv,
    exists: st?.type === "dir",
    ownedByUser: !!st && st.uid === user.uid,
    writable: user.other ? null : st ? await host.writable(p) : false,
    uid: st ? st.uid : null,
    mode: st ? st.mode & 0o7777 : null,
  };
}

export async function userFacts(ctx: ProbeContext): Promise<UserFacts> {
  const { host, user } = ctx;
  const [passwdText, groupText, subuidText, subgidText, rt, idmaps] = await Promise.all([
    host.readText("/etc/passwd"),
    host.readText("/etc/group"),
    host.readText("/etc/subuid"),
    host.readText("/etc/subgid"),
    runtimeDir(ctx),
    idMapBinaries(ctx),
  ]);
  const subuidEntries = subuidText === null ? null : parseSubIdFile(subuidText);
  const subgidEntries = subgidText === null ? null : parseSubIdFile(subgidText);
  const hasOwn = (e: SubIdEntry[] | null) => !!e?.some((x) => isOwnEntry(x, user.name, user.uid));
  const [nssUid, nssGid] = await Promise.all([
    hasOwn(subuidEntries) ? null : nssSubIds(ctx, false),
    hasOwn(subgidEntries) ? null : nssSubIds(ctx, true),
  ]);
  const realUids = parsePasswd(passwdText).map((e) => ({ name: e.name, id: e.uid }));
  const realGids = parseGroup(groupText).map((e) => ({ name: e.name, id: e.gid }));
  const homeSt = user.home ? await host.stat(user.home) : null;
  const env = host.env;
  const runtimeOwnedByOther = rt.fromEnv && !rt.ownedByUser && rt.exists;
  return {
    name: user.name,
    uid: user.uid,
    gid: user.gid,
    home: user.home,
    isRoot: user.uid === 0 || host.ids.uid === 0,
    evaluatedOther: user.other,
    homeWritable:
      !user.home || !homeSt ? (user.home ? false : null) : user.other ? homeSt.uid === user.uid : await host.writable(user.home),
    runtimeDir: rt,
    viaSuOrSudo:
      !user.other && (!!env.SUDO_USER || !!env.SUDO_UID || runtimeOwnedByOther || (!rt.fromEnv && !!env.USER && env.USER !== user.name)),
    subuid: subIdFacts("/etc/subuid", subuidEntries, user, realUids, nssUid),
    subgid: subIdFacts("/etc/subgid", subgidEntries, user, realGids, nssGid),
    newuidmap: idmaps[0],
    newgidmap: idmaps[1],
  };
}
