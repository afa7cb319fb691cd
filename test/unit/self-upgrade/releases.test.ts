// The release layout and its HTTP client (cli/apply/releases.ts): parsing, and real requests to a
// server on 127.0.0.1 (redirects, errors, limits, an HTTP proxy from the environment, Ctrl-C).
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { binaryName, checksumFor, downloadFile, fetchText, hostArch, normalizeVersion, releaseUrl, resolveBaseUrl } from "../../../cli/apply/releases";
import { ExitCode, UserError } from "../../../cli/errors";
import { DEFAULT_DOWNLOAD_URL } from "../../../cli/version";
import { REPO } from "../../helpers/cli";

const HEX = "a".repeat(64);

describe("release layout", () => {
  it("names the files of a release", () => {
    expect(binaryName("arm64")).toBe("rootless-k8s-linux-arm64");
    expect(releaseUrl.latest("https://b")).toBe("https://b/latest.txt");
    expect(releaseUrl.sums("https://b", "1.2.3")).toBe("https://b/1.2.3/SHA256SUMS");
    expect(releaseUrl.binary("https://b", "1.2.3", "amd64")).toBe("https://b/1.2.3/rootless-k8s-linux-amd64");
    expect(hostArch("x64")).toBe("amd64");
    expect(hostArch("arm64")).toBe("arm64");
    expect(() => hostArch("riscv64")).toThrow("no rootless-k8s release exists for the riscv64 architecture");
  });

  it("reads SHA256SUMS in both sha256sum modes, exact names only", () => {
    const sums = `${HEX}  rootless-k8s-linux-amd64\n${"B".repeat(64)} *rootless-k8s-linux-arm64\r\n${"c".repeat(64)}  rootless-k8s-linux-amd64.sig\n`;
    expect(checksumFor(sums, "rootless-k8s-linux-amd64")).toBe(HEX);
    expect(checksumFor(sums, "rootless-k8s-linux-arm64")).toBe("b".repeat(64));
    expect(checksumFor(sums, "rootless-k8s-linux")).toBeUndefined();
    expect(checksumFor("garbage\n", "rootless-k8s-linux-amd64")).toBeUndefined();
  });

  it("accepts release versions as users write them, nothing else", () => {
    expect(normalizeVersion(" v1.2.3\n")).toBe("1.2.3");
    expect(normalizeVersion("1.2.3-rc.1")).toBe("1.2.3-rc.1");
    expect(normalizeVersion("latest")).toBeUndefined();
    expect(normalizeVersion("1.2")).toBeUndefined();
    expect(normalizeVersion("1.2.3; rm -rf /")).toBeUndefined();
  });

  it("takes the base from --base-url, else ROOTLESS_K8S_DOWNLOAD_URL, else the default that install.sh also has", () => {
    expect(resolveBaseUrl("http://flag/", { ROOTLESS_K8S_DOWNLOAD_URL: "http://env" })).toBe("http://flag");
    expect(resolveBaseUrl(undefined, { ROOTLESS_K8S_DOWNLOAD_URL: "http://env//" })).toBe("http://env");
    expect(resolveBaseUrl(undefined, {})).toBe(DEFAULT_DOWNLOAD_URL);
    expect(readFileSync(join(REPO, "scripts", "install.sh"), "utf8")).toContain(`\nROOTLESS_K8S_DEFAULT_URL=${DEFAULT_DOWNLOAD_URL}\n`);
    expect(() => resolveBaseUrl("not a url", {})).toThrow('"not a url" is not a URL');
    expect(() => resolveBaseUrl("file:///srv", {})).toThrow("the release base must be an http(s) URL, not file:");
  });
});

describe("HTTP client against 127.0.0.1", () => {
  const big = Buffer.alloc(3 * 1024 * 1024, 7);
  let url: string;
  let proxyUrl: string;
  const proxied: string[] = [];
  const closers: (() => void)[] = [];
  let dir: string;

  const routes: Record<string, (res: ServerResponse) => void> = {
    "/latest.txt": (res) => res.end("1.2.3\n"),
    "/moved.txt": (res) => res.writeHead(302, { location: "/latest.txt" }).end(),
    "/big.txt": (res) => res.end(Buffer.alloc(65 * 1024, 0x61)),
    "/blob": (res) => res.end(big),
    "/stall": (res) => {
      res.writeHead(200, { "content-length": String(big.length) });
      res.write(big.subarray(0, 1024)); // then nothing
    },
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const route = routes[new URL(req.url ?? "/", "http://x").pathname];
    if (route) route(res);
    else res.writeHead(404).end();
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "rk8s-http-"));
    const server = createServer(handler);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    // A forward proxy for plain http: it answers requests in absolute form itself and records them.
    const proxy = createServer((req, res) => {
      proxied.push(req.url ?? "");
      handler(req, res);
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    closers.push(() => server.close(), () => proxy.close(), () => server.closeAllConnections());
  });
  afterAll(() => {
    closers.forEach((c) => c());
    rmSync(dir, { recursive: true, force: true });
  });

  const rejection = async (p: Promise<unknown>) => {
    const e = await p.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(UserError);
    return e as UserError;
  };

  it("fetches a small text file, following redirects", async () => {
    expect(await fetchText(`${url}/latest.txt`)).toBe("1.2.3\n");
    expect(await fetchText(`${url}/moved.txt`)).toBe("1.2.3\n");
  });

  it("a 404 is a network failure naming the URL and the status", async () => {
    const e = await rejection(fetchText(`${url}/9.9.9/SHA256SUMS`));
    expect(e.exitCode).toBe(ExitCode.Network);
    expect(e.message).toBe(`could not download ${url}/9.9.9/SHA256SUMS: HTTP 404`);
    expect(e.fix).toContain("--to VERSION");
  });

  it("refuses a 'small' file over 64 KiB", async () => {
    const e = await rejection(fetchText(`${url}/big.txt`));
    expect(e.exitCode).toBe(ExitCode.Verification);
  });

  it("a refused connection is a network failure", async () => {
    const e = await rejection(fetchText("http://127.0.0.1:9/latest.txt"));
    expect(e.exitCode).toBe(ExitCode.Network);
    expect(e.message).toMatch(/^could not download http:\/\/127\.0\.0\.1:9\/latest\.txt: /);
  });

  it("streams a download to a new 0700 file and returns its SHA-256; never overwrites a file", async () => {
    const dest = join(dir, "blob");
    const got = await downloadFile(`${url}/blob`, dest);
    expect(got).toEqual({ sha256: createHash("sha256").update(big).digest("hex"), bytes: big.length });
    expect(readFileSync(dest).equals(big)).toBe(true);
    expect(statSync(dest).mode & 0o777).toBe(0o700);
    writeFileSync(join(dir, "taken"), "mine");
    await rejection(downloadFile(`${url}/blob`, join(dir, "taken")));
    expect(readFileSync(join(dir, "taken"), "utf8")).toBe("mine");
  });

  it("stops on Ctrl-C (the abort signal) with the interrupted exit code", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("SIGINT")), 200);
    const e = await rejection(downloadFile(`${url}/stall`, join(dir, "stalled"), { signal: ac.signal }));
    expect(e.exitCode).toBe(ExitCode.Interrupted);
  });

  it("goes through the proxy in HTTP_PROXY", async () => {
    const saved = { HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY, no_proxy: process.env.no_proxy };
    process.env.HTTP_PROXY = proxyUrl;
    delete process.env.NO_PROXY;
    delete process.env.no_proxy;
    try {
      expect(await fetchText("http://releases.invalid/latest.txt")).toBe("1.2.3\n");
      expect(proxied).toEqual(["http://releases.invalid/latest.txt"]);
    } finally {
      for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
});
