#!/usr/bin/env python3
"""The memory of a node, per component: the PSS and RSS (smaps_rollup) of every process of a user,
and of every process whose uid is one of the user's subordinate ids (/etc/subuid: a container's
non-root user, e.g. CoreDNS's 65532), summed by component, as JSON (issue 33). Run as root.

    footprint.py UID            {"components": {"kube-apiserver": {"pssMiB": .., "anonMiB": .., "fileMiB": ..,
                                 "rssMiB": .., "processes": 1}, ..}, "totalPssMiB": .., "anonMiB": .., "fileMiB": ..,
                                 "totalRssMiB": .., "processes": ..}
    footprint.py --table JSON [AFTER]   that JSON as a table (MiB), with AFTER's PSS beside each row: the
                                 one presenter of the e2e's footprint scenario and `make bench`

anonMiB and fileMiB split the PSS: the heaps and stacks (Pss_Anon), and the pages mapped from the
binaries (Pss_File: clean, dropped by the kernel under memory pressure, read again when needed).

A component is the executable's name (kube-apiserver, etcd, containerd, coredns, ...): the shims are
"containerd-shim", the pods' pause containers "pause", and rootless-k8s's own processes are named by
their subcommand ("rootless-k8s ports", "rootless-k8s overlay", "rootless-k8s approver", "rootless-k8s netpol", and the
supervisor of a node run without systemd, "rootless-k8s up").
"""
import json
import os
import sys

AGENTS = {"ports", "overlay", "approver", "netpol", "up"}


def component(pid: str) -> str:
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe")).removesuffix(" (deleted)")
    except OSError:
        exe = ""
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        argv = [a.decode(errors="replace") for a in argv if a]
    except OSError:
        argv = []
    if not exe and argv:
        exe = os.path.basename(argv[0])
    if exe.startswith("containerd-shim"):
        return "containerd-shim"
    if exe.startswith("rootless-k8s") or (exe == "node" and any(a.endswith("rootless-k8s") for a in argv[:2])):
        sub = next((a for a in argv[1:] if a in AGENTS), None)
        return f"rootless-k8s {sub}" if sub else "rootless-k8s"
    if exe == "exe" and argv:  # RootlessKit's child re-executes /proc/self/exe
        return os.path.basename(argv[0])
    return exe or "?"


def rollup(pid: str) -> dict[str, int]:
    """The process's smaps_rollup in kB: {"Rss": .., "Pss": .., "Pss_Anon": .., "Pss_File": .., ...}; {} when it is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    out[parts[0].rstrip(":")] = int(parts[1])
    except (OSError, ValueError):
        return {}
    return out


def subordinate(uid: int) -> list[range]:
    """The user's ranges in /etc/subuid (lines NAME:START:COUNT or UID:START:COUNT)."""
    import pwd

    names = {str(uid)}
    try:
        names.add(pwd.getpwuid(uid).pw_name)
    except KeyError:
        pass
    out = []
    try:
        for line in open("/etc/subuid"):
            f = line.strip().split(":")
            if len(f) == 3 and f[0] in names:
                out.append(range(int(f[1]), int(f[1]) + int(f[2])))
    except (OSError, ValueError):
        pass
    return out


def table(now: dict, after: dict | None) -> None:
    """Per component: PSS, its anonymous and file-backed parts, RSS, processes (and AFTER's PSS), then the total."""
    row = "  %-26s %8s %8s %8s %8s %5s" + ("   %s" if after else "")
    print(row % (("component", "PSS", "anon", "file", "RSS", "procs") + (("PSS after",) if after else ())))
    rows = [(k, v["pssMiB"], v["anonMiB"], v["fileMiB"], v["rssMiB"], v["processes"]) for k, v in now["components"].items()]
    rows.append(("total", now["totalPssMiB"], now["anonMiB"], now["fileMiB"], now["totalRssMiB"], now["processes"]))
    for r in rows:
        later = () if after is None else ((after["totalPssMiB"] if r[0] == "total" else after["components"].get(r[0], {}).get("pssMiB", "-")),)
        print(row % (r + later))


def main() -> None:
    if sys.argv[1] == "--table":
        table(json.loads(sys.argv[2]), json.loads(sys.argv[3]) if len(sys.argv) > 3 else None)
        return
    uid = int(sys.argv[1])
    subs = subordinate(uid)
    by: dict[str, dict[str, int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            owner = os.stat(f"/proc/{pid}").st_uid
            if owner != uid and not any(owner in r for r in subs):
                continue
        except OSError:
            continue
        r = rollup(pid)
        v = {k: r.get(key, 0) for k, key in (("pss", "Pss"), ("rss", "Rss"), ("anon", "Pss_Anon"), ("file", "Pss_File"))}
        if v["rss"] == 0:  # a kernel thread, or gone
            continue
        c = by.setdefault(component(pid), {"pss": 0, "rss": 0, "anon": 0, "file": 0, "n": 0})
        for k in v:
            c[k] += v[k]
        c["n"] += 1
    mib = lambda k: round(k / 1024, 1)  # noqa: E731
    out = {
        "components": {
            name: {"pssMiB": mib(c["pss"]), "anonMiB": mib(c["anon"]), "fileMiB": mib(c["file"]), "rssMiB": mib(c["rss"]), "processes": c["n"]}
            for name, c in sorted(by.items(), key=lambda kv: -kv[1]["pss"])
        },
        "totalPssMiB": mib(sum(c["pss"] for c in by.values())),
        "anonMiB": mib(sum(c["anon"] for c in by.values())),
        "fileMiB": mib(sum(c["file"] for c in by.values())),
        "totalRssMiB": mib(sum(c["rss"] for c in by.values())),
        "processes": sum(c["n"] for c in by.values()),
    }
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
