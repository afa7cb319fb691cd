// An agent's state file (what its last pass did, in the runtime folder), as `status` reads it:
// null when it is missing, unreadable, or of a schema this release does not know.
import { promises as fsp } from "node:fs";

export async function readStateFile<T extends { schemaVersion: number }>(file: string): Promise<T | null> {
  try {
    const s = JSON.parse(await fsp.readFile(file, "utf8")) as T;
    return s.schemaVersion === 1 ? s : null;
  } catch {
    return null;
  }
}
