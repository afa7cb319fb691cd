// Loading image archives into the installed node's runtime (`rootless-k8s image load`, and
// `install --bundle` for a bundle that carries images). The archives are validated first
// (cli/fetch/image-archive.ts); the loader is the runtime's own tool, its command line computed
// from the plan by `imageLoader` alone:
//   containerd  the version set's ctr (or the one next to --runtime-bin) on the node's containerd
//               socket, namespace k8s.io (the CRI plugin's), the node's platform, unpacked into
//               the planned snapshotter (the kubelet needs unpacked images); then each name is
//               also tagged REPO@sha256:<its target digest>, as a pull names it, so a pod that
//               names its image by digest (the add-ons', pinned) finds the loaded one (ctr's own
//               --digests names the archive's index in containerd 2, not the image);
//   docker      `docker load` on the user's rootless dockerd (cri-dockerd serves its images): with
//               --input FILE, or, for an OCI layout without a `docker save` manifest.json (which
//               `docker load` before Docker 25 needs), the archive on its stdin with one put in
//               front (cli/fetch/docker-load.ts);
//   crio        refused: loading into CRI-O's storage needs skopeo, which is not part of the set.
// The socket lies in $XDG_RUNTIME_DIR on the host's side too (`status` talks CRI to it the same
// way), so the loader runs on the host; the runtime reads the streamed archive and unpacks inside
// its namespaces. Afterwards the runtime's CRI must list every name: what the kubelet will see.
import { spawn } from "node:child_process";
import { constants, promises as fsp } from "node:fs";
import * as path from "node:path";
import { ExitCode, UserError, messageOf } from "../errors";
import type { Readable } from "node:stream";
import { extractBundleImages } from "../fetch/bundle";
import { dockerLoadStream } from "../fetch/docker-load";
import { readImageArchive, type ArchiveImage, type ImageArchive } from "../fetch/image-archive";
import { normalizeImageRef, parseImageRef } from "../fetch/image-ref";
import type { Plan } from "../plan/plan";
import { criClient } from "../clients/cri";
import { readReceipt, receiptLocation } from "./receipt";

/** containerd's namespace for what the CRI plugin (and so the kubelet) sees. */
export const CRI_NAMESPACE = "k8s.io";

export interface LoaderCommand {
  /** The program (an absolute path for ctr; `docker` is looked up on PATH). */
  cmd: string;
  argv: string[];
  /** The socket the loader talks to, checked before it runs. */
  socket: string;
}

/** The ctr of the node's containerd: the version set's, or the one next to --runtime-bin's containerd. */
export function ctrPath(plan: Plan): string {
  return plan.runtime.source === "bundled" ? path.join(plan.paths.binDir, "ctr") : path.join(path.dirname(plan.runtime.binary), "ctr");
}

/** ctr on the node's containerd, in the CRI plugin's namespace: `ctr --address S --namespace k8s.io ARGS`. */
export function ctrCommand(plan: Plan, ...args: string[]): LoaderCommand {
  const socket = plan.runtime.criSocket;
  return { cmd: ctrPath(plan), argv: ["--address", socket, "--namespace", CRI_NAMESPACE, ...args], socket };
}

/** The image's target digest in `ctr images ls name==NAME` output (REF TYPE DIGEST ...); null when not listed. */
export function targetDigest(listing: string, name: string): string | null {
  for (const line of listing.split("\n")) {
    const [ref, , digest] = line.trim().split(/\s+/);
    if (ref === name && digest && /^sha256:[0-9a-f]{64}$/.test(digest)) return digest;
  }
  return null;
}

/**
 * The exact command that loads `file` into the node's runtime. Pure: a function of the plan.
 * `stdin`: docker reads the archive from its standard input instead (dockerLoadStream).
 */
export function imageLoader(plan: Plan, file: string, { stdin = false }: { stdin?: boolean } = {}): LoaderCommand {
  const rt = plan.runtime;
  switch (rt.name) {
    case "containerd":
      return {
        cmd: ctrPath(plan),
        argv: [
          "--address",
          rt.criSocket,
          "--namespace",
          CRI_NAMESPACE,
          "images",
          "import",
          "--platform",
          `linux/${plan.arch}`,
          "--snapshotter",
          rt.snapshotter?.name ?? "overlayfs",
          file,
        ],
        socket: rt.criSocket,
      };
    case "docker": {
      const socket = rt.docker?.socket ?? "";
      return { cmd: "docker", argv: ["--host", `unix://${socket}`, "load", ...(stdin ? [] : ["--input", file])], socket };
    }
    case "crio":
      throw new UserError(
        "this node runs CRI-O, and loading an image archive into CRI-O's storage needs skopeo, which rootless-k8s does not install",
        {
          exitCode: ExitCode.Refused,
          fix: "serve the image from a registry the node can reach, or install the node with --runtime containerd",
        },
      );
  }
}

/** The installed node's plan; exit 3 when no node is installed. */
export async function installedPlan(env: NodeJS.ProcessEnv, prefix?: string): Promise<Plan> {
  const file = receiptLocation(env, prefix);
  const r = await readReceipt(file);
  if (!r || r.state === "uninstalled" || !r.plan) {
    throw new UserError(`no node installed (no receipt at ${file}${r?.state === "uninstalled" ? ": uninstalled" : ""})`, {
      exitCode: ExitCode.Refused,
      fix: prefix
        ? "run `rootless-k8s install --prefix DIR` first, or check the --prefix"
        : "run `rootless-k8s install` first (or pass the --prefix it was installed with)",
    });
  }
  return r.plan as Plan;
}

export interface LoadedImage extends ArchiveImage {
  file: string;
  /** The image ID the runtime's CRI reports for the name, or null when CRI did not answer. */
  criId: string | null;
}

export interface LoadOptions {
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal | undefined;
  /** Called after each archive is loaded. */
  onLoaded?: (images: LoadedImage[]) => void;
  /** How long the runtime's CRI may take to list a loaded name (default 10 s). */
  criWaitMs?: number;
}

/** Checks what the loader needs before it runs: the runtime's socket, and ctr itself. */
async function preflight(plan: Plan, loader: LoaderCommand): Promise<void> {
  const st = await fsp.stat(loader.socket).catch(() => null);
  if (!st?.isSocket()) {
    const what = plan.runtime.name === "docker" ? "the rootless Docker daemon" : `the node's ${plan.runtime.name}`;
    const start = plan.runtime.name === "docker" ? "systemctl --user start docker" : "rootless-k8s start";
    throw new UserError(`${what} is not running (no socket at ${loader.socket})`, {
      exitCode: ExitCode.Refused,
      fix: `start it (${start}) and re-run`,
    });
  }
  if (path.isAbsolute(loader.cmd)) {
    const ok = await fsp.access(loader.cmd, constants.X_OK).then(
      () => true,
      () => false,
    );
    if (!ok) {
      throw new UserError(`${loader.cmd} is missing or not executable`, {
        exitCode: ExitCode.Refused,
        fix:
          plan.runtime.source === "bundled"
            ? "re-run `rootless-k8s install` to restore the node's binaries"
            : `put the ctr of your containerd next to ${plan.runtime.binary}`,
      });
    }
  }
}

/** Runs one loader (`input`: its standard input); resolves with its output, rejects with the last lines of its errors. */
function runLoader(loader: LoaderCommand, env: NodeJS.ProcessEnv, signal?: AbortSignal, input?: Readable | null): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(loader.cmd, loader.argv, {
      env,
      stdio: [input ? "pipe" : "ignore", "pipe", "pipe"],
      ...(signal ? { signal } : {}),
    });
    if (input && child.stdin) {
      // A loader that stops reading (it failed) ends the pipe: its exit status says why, not EPIPE.
      child.stdin.on("error", () => {});
      input.on("error", (e) => {
        child.stdin?.destroy();
        reject(e);
      });
      input.pipe(child.stdin);
    }
    let out = "";
    let err = "";
    child.stdout?.on("data", (d: Buffer) => (out = (out + d.toString("utf8")).slice(-65536)));
    child.stderr?.on("data", (d: Buffer) => (err = (err + d.toString("utf8")).slice(-65536)));
    child.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") {
        reject(
          new UserError(`${loader.cmd} not found`, {
            exitCode: ExitCode.Refused,
            fix: `install the ${loader.cmd} CLI (the runtime's own loader) and re-run`,
          }),
        );
      } else reject(e);
    });
    child.on("close", (code, sig) => {
      if (code === 0) return resolve(out);
      const last = (err.trim() || out.trim()).split("\n").filter(Boolean).slice(-1)[0] ?? "";
      reject(new Error(`${path.basename(loader.cmd)} exited with ${code ?? sig}${last ? `: ${last}` : ""}`));
    });
  });
}

/** docker.io/library/busybox:1.36.1 → docker.io/library/busybox (names are normalized, with a tag). */
export function repositoryOf(name: string): string {
  const r = parseImageRef(name);
  return r ? `${r.domain}/${r.path}` : name.replace(/[:@][^/]*$/, "");
}

/** Names each loaded image also REPO@<target digest>, as a pull would (the kubelet looks pinned images up so). */
async function tagDigests(plan: Plan, a: ImageArchive, opts: LoadOptions): Promise<void> {
  for (const i of a.images) {
    try {
      const digest = targetDigest(await runLoader(ctrCommand(plan, "images", "ls", `name==${i.name}`), opts.env, opts.signal), i.name);
      if (!digest) throw new Error(`ctr images ls does not list ${i.name}`);
      await runLoader(ctrCommand(plan, "images", "tag", "--force", i.name, `${repositoryOf(i.name)}@${digest}`), opts.env, opts.signal);
    } catch (e) {
      throw new UserError(`loaded ${a.file}, but could not name ${i.name} by its digest: ${messageOf(e)}`, {
        exitCode: opts.signal?.aborted ? ExitCode.Interrupted : ExitCode.Failure,
        fix: "re-run the load (loading again is harmless); pods that name this image by tag run meanwhile",
      });
    }
  }
}

/** Whether `tag` (as a runtime lists it: full or familiar) names `name` (normalized). */
const sameName = (tag: string, name: string) => normalizeImageRef(tag) === name;

/**
 * Loads each validated archive into the node's runtime, one after another, and checks that the
 * runtime's CRI lists every name afterwards. A loader failure is exit 1 naming the archive.
 */
export async function loadImages(plan: Plan, archives: readonly ImageArchive[], opts: LoadOptions): Promise<LoadedImage[]> {
  const loaded: LoadedImage[] = [];
  for (const a of archives) {
    const input = plan.runtime.name === "docker" ? await dockerLoadStream(a) : null;
    const loader = imageLoader(plan, path.resolve(a.file), { stdin: input !== null });
    try {
      await preflight(plan, loader);
    } catch (e) {
      input?.destroy();
      throw e;
    }
    try {
      await runLoader(loader, opts.env, opts.signal, input);
    } catch (e) {
      if (e instanceof UserError) throw e;
      throw new UserError(`loading ${a.file} into ${plan.runtime.name} failed: ${messageOf(e)}`, {
        exitCode: opts.signal?.aborted ? ExitCode.Interrupted : ExitCode.Failure,
        fix: `check the node (rootless-k8s status; rootless-k8s logs ${plan.runtime.name === "docker" ? "cri-dockerd" : "rootlesskit"}) and re-run; loading again is harmless`,
      });
    }
    if (plan.runtime.name === "containerd") await tagDigests(plan, a, opts);
    const ids = await criIds(plan, a.images, opts.criWaitMs ?? 10_000, opts.signal);
    const missing = ids ? a.images.filter((i) => !ids.has(i.name)) : [];
    if (missing.length > 0) {
      throw new UserError(`${plan.runtime.name} loaded ${a.file}, but its CRI does not list ${missing.map((i) => i.name).join(", ")}`, {
        exitCode: ExitCode.Failure,
        fix: "the kubelet will not find these images: check the names with `crictl images` (rootless-k8s status shows the CRI socket)",
      });
    }
    const done = a.images.map((i) => ({ ...i, file: a.file, criId: ids?.get(i.name) ?? null }));
    loaded.push(...done);
    opts.onLoaded?.(done);
  }
  return loaded;
}

/**
 * `install --bundle`: the image archives the bundle carries (bundle --image), extracted verified
 * into a private folder of the cache (extractBundleImages reads the bundle's index itself), validated
 * for the node's arch, loaded like `image load`, then removed. None for a bundle without images.
 */
export async function loadBundleImages(plan: Plan, bundle: string, opts: LoadOptions): Promise<LoadedImage[]> {
  await fsp.mkdir(plan.paths.cacheDir, { recursive: true, mode: 0o700 });
  const dir = await fsp.mkdtemp(path.join(plan.paths.cacheDir, "bundle-images-"));
  try {
    const files = await extractBundleImages(bundle, dir, opts.signal);
    const archives: ImageArchive[] = [];
    for (const f of files) archives.push(await readImageArchive(f, { arch: plan.arch, ...(opts.signal ? { signal: opts.signal } : {}) }));
    return await loadImages(plan, archives, opts);
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

/** name → image ID as the runtime's CRI lists them, waiting for the names; null when CRI does not answer. */
async function criIds(
  plan: Plan,
  images: readonly ArchiveImage[],
  waitMs: number,
  signal?: AbortSignal,
): Promise<Map<string, string> | null> {
  const c = criClient(plan.runtime.criSocket, 5000);
  const deadline = Date.now() + waitMs;
  try {
    for (;;) {
      let listed: { id: string; tags: string[] }[];
      try {
        listed = await c.listImages();
      } catch {
        return null;
      }
      const ids = new Map<string, string>();
      for (const i of images) {
        const hit = listed.find((l) => l.tags.some((t) => sameName(t, i.name)));
        if (hit) ids.set(i.name, hit.id);
      }
      if (ids.size === images.length || Date.now() >= deadline || signal?.aborted) return ids;
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    c.close();
  }
}
