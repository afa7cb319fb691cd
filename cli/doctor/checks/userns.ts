// User namespaces: allowed by the kernel's switches, not blocked by AppArmor for the rootlesskit the
// node will run (checked before the first failure, not after it), and really working.
import { fail, ok, skip, warn, type Check } from "../check";
import { apparmorProfileFix, sysctlFix } from "../fixes";
import { profileCovers } from "../../host/parse/apparmor";

export const usernsChecks: Check[] = [
  {
    id: "userns-clone",
    group: "userns",
    label: "userns_clone sysctl",
    blocks: true,
    run: (f) => {
      const v = f.userns.unprivilegedUsernsClone;
      if (v === null) return skip("this kernel has no such switch (user namespaces are not gated by it)");
      if (v === 1) return ok("1");
      return fail("0: unprivileged user namespaces are disabled", {
        root: sysctlFix("50-rootless-k8s-userns-clone", { "kernel.unprivileged_userns_clone": 1 }),
      });
    },
  },
  {
    id: "max-user-namespaces",
    group: "userns",
    label: "max_user_namespaces",
    blocks: true,
    run: (f) => {
      const v = f.userns.maxUserNamespaces;
      const fix = { root: sysctlFix("51-rootless-k8s-max-user-namespaces", { "user.max_user_namespaces": 28633 }) };
      if (v === null) return skip("not readable");
      if (v === 0) return fail("0: no user namespaces may be created", fix);
      if (v < 1024) return warn(`${v}: low, pods may fail to start ("no space left on device")`, fix);
      return ok(String(v));
    },
  },
  {
    id: "rhel7-userns",
    group: "userns",
    label: "RHEL 7 boot flag",
    run: (f) => {
      if (!/\.el7/.test(f.kernel.release)) return skip("not a RHEL/CentOS 7 kernel");
      if (!f.userns.rhel7BootFlagMissing) return ok("user_namespace.enable=1 is on the kernel command line");
      return {
        ...warn("user_namespace.enable=1 is not on the kernel command line; older RHEL 7 kernels need it", {
          root: [
            'grubby --args="namespace.unpriv_enable=1 user_namespace.enable=1" --update-kernel="$(grubby --default-kernel)"',
            "reboot",
          ],
        }),
        rootFixInScript: false,
      };
    },
  },
  {
    id: "apparmor-userns",
    group: "userns",
    label: "AppArmor userns",
    blocks: true,
    run: (f) => {
      const u = f.userns;
      if (u.apparmorRestrict === null) return skip("no AppArmor user namespace restriction on this kernel");
      if (u.apparmorRestrict === 0) return ok("kernel.apparmor_restrict_unprivileged_userns = 0");
      if (u.rootlesskitCovered) {
        const files = u.apparmorUsernsProfiles.filter((p) => u.rootlesskitRealPaths.some((r) => profileCovers(p, r))).map((p) => p.file);
        return ok(`restricted, and ${[...new Set(files)].join(", ")} grants userns to ${u.rootlesskitPath}`);
      }
      return fail(
        `restricted (Ubuntu 23.10+) and no profile in /etc/apparmor.d grants userns to ${u.rootlesskitPath}: RootlessKit would fail with "operation not permitted"`,
        {
          root: apparmorProfileFix(u.rootlesskitProfileAttach, f.user.name),
        },
      );
    },
  },
  {
    id: "userns-smoke",
    group: "userns",
    label: "user namespace test",
    blocks: true,
    run: (f) => {
      const s = f.userns.smokeTest;
      if (s === null)
        return skip(f.user.evaluatedOther ? "not run for another user" : "not run (no unshare, commands not run, or running as root)");
      if (s.ok) return ok("unshare --user --map-root-user true works");
      return fail(`unshare --user --map-root-user true failed${s.error ? `: ${s.error}` : ""}`, null, [
        "the checks above name the cause and the fix",
      ]);
    },
  },
];
