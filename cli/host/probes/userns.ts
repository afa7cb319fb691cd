// User namespaces: the sysctls and boot flag that allow them, the AppArmor restriction and the
// profiles that lift it for the rootlesskit binary the node will run, and a real smoke test.
import * as path from "node:path";
import type { UsernsFacts } from "../facts";
import { isEl7Kernel } from "../parse/kernel";
import { parseIntOrNull } from "../parse/procfs";
import { profileCovers, usernsProfilesIn, type UsernsProfile } from "../parse/apparmor";
import { findTool, probeRun, type ProbeContext } from "./context";

async function usernsProfiles(ctx: ProbeContext): Promise<UsernsProfile[]> {
  const names = (await ctx.host.readDir("/etc/apparmor.d")) ?? [];
  const files = names.filter((n) => !n.startsWith(".") && !/\.(dpkg-\w+|rpmnew|rpmsave|orig|bak)$/.test(n));
  const texts = await Promise.all(files.map(async (n) => [n, await ctx.host.readText(`/etc/apparmor.d/${n}`)] as const));
  return texts.flatMap(([n, t]) => (t ? usernsProfilesIn(t, `/etc/apparmor.d/${n}`) : []));
}

/**
 * The paths AppArmor will match for the node's rootlesskit. AppArmor attaches by the executable's
 * real path, so a `current` link is resolved; before install the version set is unknown and a
 * placeholder set stands for "any set", which only a glob profile covers.
 */
export async function rootlesskitRealPaths(ctx: ProbeContext): Promise<{ real: string[]; attach: string }> {
  const p = ctx.rootlesskitPath;
  const m = /^(.*)\/versions\/([^/]+)\/bin\/rootlesskit$/.exec(p);
  if (!m) return { real: [p], attach: p };
  const [, share, set] = m;
  const attach = `${share}/versions/*/bin/rootlesskit`;
  if (set !== "current") return { real: [p], attach };
  const link = await ctx.host.readLink(`${share}/versions/current`);
  const target = link ? path.posix.basename(link) : "any-version-set";
  return { real: [`${share}/versions/${target}/bin/rootlesskit`], attach };
}

async function smokeTest(ctx: ProbeContext): Promise<UsernsFacts["smokeTest"]> {
  const { host, user } = ctx;
  if (!host.canRun || user.other || host.ids.uid === 0) return null;
  const unshare = await findTool(host, "unshare");
  if (!unshare) return null;
  const r = await probeRun(ctx, unshare, ["--user", "--map-root-user", "true"], 1000);
  if (r.notFound || r.timedOut) return null;
  return { ok: r.code === 0, error: r.code === 0 ? null : (r.stderr.trim().split("\n").pop() ?? null) };
}

export async function usernsFacts(ctx: ProbeContext, kernelRelease: string, cmdline: string | null): Promise<UsernsFacts> {
  const { host } = ctx;
  const [clone, max, restrict, aaEnabled, profiles, rk, smoke] = await Promise.all([
    host.readText("/proc/sys/kernel/unprivileged_userns_clone"),
    host.readText("/proc/sys/user/max_user_namespaces"),
    host.readText("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
    host.readText("/sys/module/apparmor/parameters/enabled"),
    usernsProfiles(ctx),
    rootlesskitRealPaths(ctx),
    smokeTest(ctx),
  ]);
  const apparmorRestrict = parseIntOrNull(restrict);
  return {
    unprivilegedUsernsClone: parseIntOrNull(clone),
    maxUserNamespaces: parseIntOrNull(max),
    rhel7BootFlagMissing: isEl7Kernel(kernelRelease) && !/\buser_namespace\.enable=1\b/.test(cmdline ?? ""),
    apparmorRestrict,
    apparmorEnabled: aaEnabled === null ? null : aaEnabled.trim() === "Y",
    apparmorUsernsProfiles: profiles,
    rootlesskitPath: ctx.rootlesskitPath,
    rootlesskitRealPaths: rk.real,
    rootlesskitProfileAttach: rk.attach,
    rootlesskitCovered: apparmorRestrict === 1 ? rk.real.every((p) => profiles.some((pr) => profileCovers(pr, p))) : null,
    smokeTest: smoke,
  };
}
