// A stand-in `systemctl` for tests of uninstall on a machine without a user manager (this test machine
// has no systemd as PID 1): it answers `--user show-environment` (reachable), says every unit is
// not-found, and accepts every other call. Put its folder first on PATH. Only uninstall's file removal
// is under test where it is used; what the tool asks systemd is logged to `<dir>/calls` for inspection.
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function systemctlDouble(dir: string): string {
  const file = join(dir, "systemctl");
  writeFileSync(
    file,
    [
      "#!/bin/sh",
      `printf '%s\\n' "$*" >>'${join(dir, "calls")}'`,
      'case " $* " in',
      "  *' show '*) echo LoadState=not-found; echo ActiveState=inactive ;;",
      "esac",
      "exit 0",
      "",
    ].join("\n"),
  );
  chmodSync(file, 0o755);
  chmodSync(dir, 0o755);
  return dir;
}
