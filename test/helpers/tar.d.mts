// Types of tar.mjs, for the TypeScript tests.
export interface TarEntry {
  path: string;
  /** Default "file". */
  type?: "file" | "dir" | "symlink" | "hardlink" | "char" | "block" | "fifo";
  content?: Buffer | string;
  /** Default 0644 for files, 0755 for folders, 0777 for symlinks. */
  mode?: number;
  uid?: number;
  gid?: number;
  linkpath?: string;
  /** Seconds since the epoch; default 0. */
  mtime?: number;
}
export declare function tarBuffer(entries: TarEntry[]): Buffer;
export declare function tarGz(entries: TarEntry[], level?: number): Buffer;
