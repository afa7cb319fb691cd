// cgroups: v2 with cpu, memory and pids delegated to user@UID.service gives the `delegated` mode;
// anything else gives `none`. systemd >= 244 is needed to delegate cpuset.
import { delegatesCore, missingCore } from "../../host/cgroups";
import { ok, skip, warn, type Check } from "../check";
import { cgroupV2BootFix, delegateControllers, delegateFix } from "../fixes";

export const cgroupChecks: Check[] = [
  {
    id: "cgroup-version",
    group: "cgroup",
    label: "cgroup version",
    run: (f) => {
      const m = f.cgroup.mode;
      if (m === "v2") return ok("v2 (unified)");
      const what = m === "hybrid" ? "hybrid (v1 controllers, empty v2 hierarchy)" : "v1";
      return {
        ...warn(`${what}: no delegation possible, the node runs in mode none`, { root: cgroupV2BootFix(f) }),
        rootFixInScript: false,
      };
    },
  },
  {
    id: "cgroup-delegation",
    group: "cgroup",
    label: "delegated controllers",
    run: (f) => {
      const c = f.cgroup;
      if (c.mode !== "v2") return skip("needs cgroup v2");
      const fix = {
        root: delegateFix(f.systemd.version),
        user: ["# log out and back in (or reboot) so user@.service starts with the new delegation"],
      };
      if (c.userControllers === null) return warn(`${c.userServicePath}/cgroup.controllers is missing: is the user manager running?`, fix);
      const have = c.userControllers.join(" ") || "none";
      if (delegatesCore(c.mode, c.userControllers)) {
        const extra = ["cpuset", "io"].filter((x) => !c.userControllers!.includes(x as never));
        return ok(`${have}${extra.length ? ` (not ${extra.join(", ")}: fine)` : ""}`);
      }
      const missing = missingCore(c.userControllers);
      return warn(`user@${f.user.uid}.service has ${have}; missing ${missing.join(", ")}: the node runs in mode none`, fix, [
        `Delegate=${delegateControllers(f.systemd.version)} gives the delegated mode`,
      ]);
    },
  },
  {
    id: "systemd-version",
    group: "cgroup",
    label: "systemd version",
    run: (f) => {
      const v = f.systemd.version;
      if (v === null) return skip("unknown");
      if (v < 244 && f.cgroup.mode === "v2") return warn(`${v}: cpuset cannot be delegated before 244 (cpu, memory and pids still can)`);
      return ok(String(v));
    },
  },
];
