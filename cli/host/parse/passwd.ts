// /etc/passwd and /etc/group: name:x:id:... lines (group has no home). Used to resolve --user and to
// find real ids that collide with subordinate id ranges.

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
  shell: string;
}

export function parsePasswd(text: string | null): PasswdEntry[] {
  const out: PasswdEntry[] = [];
  for (const line of (text ?? "").split("\n")) {
    if (!line || line.startsWith("#") || line.startsWith("+") || line.startsWith("-")) continue;
    const f = line.split(":");
    if (f.length < 7 || !/^\d+$/.test(f[2]!) || !/^\d+$/.test(f[3]!)) continue;
    out.push({ name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), home: f[5]!, shell: f[6]! });
  }
  return out;
}

export interface GroupEntry {
  name: string;
  gid: number;
}

export function parseGroup(text: string | null): GroupEntry[] {
  const out: GroupEntry[] = [];
  for (const line of (text ?? "").split("\n")) {
    const f = line.split(":");
    if (f.length < 3 || !f[0] || !/^\d+$/.test(f[2]!)) continue;
    out.push({ name: f[0], gid: Number(f[2]) });
  }
  return out;
}
