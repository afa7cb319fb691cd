// The release layout (cli/self/releases.ts) and how it is read through cli/fetch's HTTP client:
// parsing, and real requests to servers on 127.0.0.1 (redirects, errors, limits, retries, a deadline,
// an HTTP proxy from the environment, Ctrl-C, a private CA and the https → http refusal).
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyPairSync, sign } from "node:crypto";
import {
  binaryName,
  checksumFor,
  downloadFile,
  fetchText,
  hostArch,
  normalizeVersion,
  releaseUrl,
  resolveBaseUrl,
  sumsNameVersion,
  verifySums,
} from "../../../cli/self/releases";
import { ExitCode } from "../../../cli/errors";
import { DEFAULT_DOWNLOAD_URL } from "../../../cli/version";
import { REPO } from "../../helpers/cli";
import { userErrorOf } from "../../helpers/errors";
import { sha256 } from "../../helpers/hash";
import { startServer, type TestServer } from "../../helpers/http-server";
import { startProxy, type TestProxy } from "../../helpers/proxy";
import { tempDir } from "../../helpers/temp";
import { makeTestCa, type TlsMaterial } from "../../helpers/tls";

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

  it("tells a release's SHA256SUMS by the VERSION line scripts/release.sh writes (the version and a newline)", () => {
    const line = (v: string) => `${sha256(`${v}\n`)}  VERSION\n`;
    const sums = `${HEX}  rootless-k8s-linux-amd64\n${line("1.2.3")}`;
    expect(sumsNameVersion(sums, "1.2.3")).toBe(true);
    expect(sumsNameVersion(sums, "1.2.4")).toBe(false);
    expect(sumsNameVersion(`${HEX}  rootless-k8s-linux-amd64\n`, "1.2.3")).toBe(false);
    expect(sumsNameVersion(`${sha256("1.2.3")}  VERSION\n`, "1.2.3")).toBe(false);
  });

  it("accepts release versions as users write them, nothing else", () => {
    expect(normalizeVersion(" v1.2.3\n")).toBe("1.2.3");
    expect(normalizeVersion("1.2.3-rc.1")).toBe("1.2.3-rc.1");
    expect(normalizeVersion("latest")).toBeUndefined();
    expect(normalizeVersion("1.2")).toBeUndefined();
    expect(normalizeVersion("1.2.3; rm -rf /")).toBeUndefined();
  });

  it("takes the base from --base-url, else ROOTLESS_K8S_DOWNLOAD_URL, else the default that install.sh also has", () => {
    expect(resolveBaseUrl("https://flag/", { ROOTLESS_K8S_DOWNLOAD_URL: "https://env" })).toBe("https://flag");
    expect(resolveBaseUrl(undefined, { ROOTLESS_K8S_DOWNLOAD_URL: "https://env//" })).toBe("https://env");
    expect(resolveBaseUrl(undefined, {})).toBe(DEFAULT_DOWNLOAD_URL);
    expect(readFileSync(join(REPO, "scripts", "install.sh"), "utf8")).toContain(`\nROOTLESS_K8S_DEFAULT_URL=${DEFAULT_DOWNLOAD_URL}\n`);
    expect(() => resolveBaseUrl("not a url", {})).toThrow('"not a url" is not a URL');
    expect(() => resolveBaseUrl("file:///srv", {})).toThrow("the release base must be an http(s) URL, not file:");
  });

  it("refuses a plain-http base unless --insecure-http says so", () => {
    expect(() => resolveBaseUrl("http://flag/", {})).toThrow("refused the plain-http release base http://flag");
    expect(() => resolveBaseUrl(undefined, { ROOTLESS_K8S_DOWNLOAD_URL: "http://env" })).toThrow("pass --insecure-http to accept it");
    expect(resolveBaseUrl("http://flag/", {}, { insecureHttp: true })).toBe("http://flag");
  });

  it("names the refused base as given: its path kept, its credentials out, its control characters escaped (issue 34)", () => {
    const refusal = (flag: string | undefined, env: NodeJS.ProcessEnv = {}) => {
      try {
        resolveBaseUrl(flag, env);
      } catch (e) {
        return (e as Error).message.replace(/: anyone on the path.*/, "");
      }
      return "accepted";
    };
    const base = "refused the plain-http release base";
    expect(refusal("http://127.0.0.1:9/mirror/releases")).toBe(`${base} http://127.0.0.1:9/mirror/releases (--base-url)`);
    expect(refusal(undefined, { ROOTLESS_K8S_DOWNLOAD_URL: "http://m/r/" })).toBe(`${base} http://m/r/ (ROOTLESS_K8S_DOWNLOAD_URL)`);
    expect(refusal("http://user:s3cret@m/r")).toBe(`${base} http://m/r (--base-url)`);
    expect(refusal("http://u:p@ss@m/r")).toBe(`${base} http://m/r (--base-url)`);
    expect(refusal("http://u:p\n@m/r\u001b[2J")).toBe(`${base} http://m/r\\x1b[2J (--base-url)`);
    // Spellings the URL parser takes with credentials: none of them shows the password.
    for (const odd of [
      "http:u:s3cret@m/r",
      " http://u:s3cret@m/r",
      "ht\ttp://u:s3cret@m/r",
      "http:\\\\u:s3cret@m\\r",
      "HTTP://U:s3cret@M/r",
    ]) {
      expect(new URL(odd).password, odd).toBe("s3cret");
      expect(refusal(odd), odd).not.toMatch(/s3cret/);
      expect(refusal(odd), odd).toMatch(/m\/r|m\\r|M\/r/);
    }
    expect(() => resolveBaseUrl("not a url\u001b[2J", {})).toThrow('"not a url\\x1b[2J" is not a URL');
  });

  it("verifies SHA256SUMS against its ed25519 signature with the compiled-in key form (base64 SPKI DER)", () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const pub = publicKey.export({ format: "der", type: "spki" }).toString("base64");
    const sums = Buffer.from(`${HEX}  rootless-k8s-linux-amd64\n`);
    const sig = sign(null, sums, privateKey);
    expect(verifySums(sums, sig, pub)).toBe(true);
    expect(verifySums(Buffer.from(`${"b".repeat(64)}  rootless-k8s-linux-amd64\n`), sig, pub)).toBe(false);
    const other = generateKeyPairSync("ed25519").publicKey.export({ format: "der", type: "spki" }).toString("base64");
    expect(verifySums(sums, sig, other)).toBe(false);
    expect(verifySums(sums, sig, "")).toBe(false);
    expect(verifySums(sums, sig, "not base64 of a key")).toBe(false);
    expect(verifySums(sums, Buffer.alloc(64), pub)).toBe(false);
    expect(verifySums(sums, sig.subarray(0, 63), pub)).toBe(false);
  });
});

describe("releases through cli/fetch's HTTP client, against 127.0.0.1", () => {
  const big = Buffer.alloc(3 * 1024 * 1024, 7);
  /** Retries as the client makes them, with short waits. */
  const FAST = { retries: 2, retryBaseMs: 5, retryMaxMs: 20 };
  let server: TestServer;
  let url: string;
  let proxy: TestProxy;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir("rk8s-http-");
    server = await startServer();
    url = server.url;
    server.serve("/latest.txt", "1.2.3\n");
    server.fault("/moved.txt", { kind: "redirect", to: "/latest.txt" });
    server.serve("/big.txt", Buffer.alloc(65 * 1024, 0x61));
    server.serve("/blob", big);
    server.serve("/stall", big);
    server.fault("/stall", { kind: "stall-after", bytes: 1024 });
    // A forward proxy for plain http, which alone knows where releases.invalid is.
    proxy = await startProxy({ hosts: { "releases.invalid": new URL(url).host } });
  });
  afterAll(async () => {
    await server.close();
    await proxy.close();
  });

  it("fetches a small text file, following redirects", async () => {
    expect(await fetchText(`${url}/latest.txt`)).toBe("1.2.3\n");
    expect(await fetchText(`${url}/moved.txt`)).toBe("1.2.3\n");
  });

  it("a 404 is a network failure naming the URL and the status", async () => {
    const e = await userErrorOf(fetchText(`${url}/9.9.9/SHA256SUMS`));
    expect(e.exitCode).toBe(ExitCode.Network);
    expect(e.message).toBe(`could not download ${url}/9.9.9/SHA256SUMS: HTTP 404`);
    expect(e.fix).toContain("--to VERSION");
  });

  it("refuses a 'small' file over 64 KiB", async () => {
    const e = await userErrorOf(fetchText(`${url}/big.txt`));
    expect(e.exitCode).toBe(ExitCode.Verification);
  });

  it("a refused connection is a network failure", async () => {
    const e = await userErrorOf(fetchText("http://127.0.0.1:9/latest.txt", FAST));
    expect(e.exitCode).toBe(ExitCode.Network);
    expect(e.message).toMatch(/^could not download http:\/\/127\.0\.0\.1:9\/latest\.txt: /);
    expect(e.message).toContain("connection refused (3 attempts)");
  });

  it("retries a 503 and a cut connection with backoff, then succeeds", async () => {
    server.serve("/flaky.txt", "1.2.4\n");
    server.fault("/flaky.txt", { kind: "status", status: 503, times: 1 });
    server.serve("/1.2.4/cut", big);
    server.fault("/1.2.4/cut", { kind: "drop-after", bytes: 64 * 1024, times: 1 });
    const from = server.requests.length;
    expect(await fetchText(`${url}/flaky.txt`, FAST)).toBe("1.2.4\n");
    const got = await downloadFile(`${url}/1.2.4/cut`, join(dir, "cut"), FAST);
    expect(got.sha256).toBe(sha256(big));
    expect(readFileSync(join(dir, "cut")).equals(big)).toBe(true);
    expect(server.requests.slice(from).map((r) => `${r.path} ${r.status}`)).toEqual([
      "/flaky.txt 503",
      "/flaky.txt 200",
      "/1.2.4/cut 200",
      "/1.2.4/cut 200",
    ]);
  });

  it("gives up on a persistent 503 after the retries, saying to try later (exit 5)", async () => {
    server.fault("/down.txt", { kind: "status", status: 503 });
    const from = server.requests.length;
    const e = await userErrorOf(fetchText(`${url}/down.txt`, FAST));
    expect(e.exitCode).toBe(ExitCode.Network);
    expect(e.message).toBe(`could not download ${url}/down.txt: HTTP 503`);
    expect(e.fix).toContain("try again later");
    expect(server.requests.length - from).toBe(3);
  });

  it("streams a download to a new 0700 file and returns its SHA-256; never overwrites a file", async () => {
    const dest = join(dir, "blob");
    const got = await downloadFile(`${url}/blob`, dest);
    expect(got).toEqual({ sha256: sha256(big), bytes: big.length });
    expect(readFileSync(dest).equals(big)).toBe(true);
    expect(statSync(dest).mode & 0o777).toBe(0o700);
    writeFileSync(join(dir, "taken"), "mine");
    await userErrorOf(downloadFile(`${url}/blob`, join(dir, "taken")));
    expect(readFileSync(join(dir, "taken"), "utf8")).toBe("mine");
  });

  it("stops on Ctrl-C (the abort signal) with the interrupted exit code", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("SIGINT")), 200);
    const e = await userErrorOf(downloadFile(`${url}/stall`, join(dir, "stalled"), { signal: ac.signal }));
    expect(e.exitCode).toBe(ExitCode.Interrupted);
  });

  it("ends at the deadline (the update check's) as a network failure, not an interruption", async () => {
    const e = await userErrorOf(fetchText(`${url}/stall`, { deadlineMs: 300 }));
    expect(e.exitCode).toBe(ExitCode.Network);
    expect(e.message).toBe(`could not download ${url}/stall: no answer within 0.3 s`);
  });

  it("goes through the proxy in HTTP_PROXY", async () => {
    const saved = { HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY, no_proxy: process.env.no_proxy };
    process.env.HTTP_PROXY = proxy.url;
    delete process.env.NO_PROXY;
    delete process.env.no_proxy;
    try {
      expect(await fetchText("http://releases.invalid/latest.txt")).toBe("1.2.3\n");
      expect(proxy.log).toEqual(["GET http://releases.invalid/latest.txt"]);
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  });
});

describe("releases over https with a private CA", () => {
  let tls: TlsMaterial;
  let secure: TestServer;
  let plain: TestServer;

  beforeAll(async () => {
    tls = makeTestCa();
    secure = await startServer({ tls });
    plain = await startServer();
    secure.serve("/latest.txt", "2.0.0\n");
    plain.serve("/latest.txt", "6.6.6\n");
    secure.fault("/downgrade.txt", { kind: "redirect", to: `${plain.url}/latest.txt` });
  });
  afterAll(async () => {
    await secure.close();
    await plain.close();
  });

  it("trusts the CA given with --ca-file (caFile); without it, the TLS error names --ca-file and nothing is retried", async () => {
    expect(await fetchText(`${secure.url}/latest.txt`, { caFile: tls.caFile })).toBe("2.0.0\n");
    const e = await userErrorOf(fetchText(`${secure.url}/latest.txt`, { env: {} }));
    expect(e.exitCode).toBe(ExitCode.Network);
    expect(e.message).toMatch(
      /^could not download https:\/\/127\.0\.0\.1:\d+\/latest\.txt: the TLS certificate of 127\.0\.0\.1:\d+ is not trusted/,
    );
    expect(e.fix).toContain("--ca-file FILE");
  });

  it("refuses a redirect from https to http (exit 4) and asks the http server nothing", async () => {
    const e = await userErrorOf(fetchText(`${secure.url}/downgrade.txt`, { caFile: tls.caFile }));
    expect(e.exitCode).toBe(ExitCode.Verification);
    expect(e.message).toContain("refused a redirect from https to http");
    expect(plain.requests).toEqual([]);
  });

  it("refuses an unreadable --ca-file as bad usage, before any request", async () => {
    const from = secure.requests.length;
    const e = await userErrorOf(fetchText(`${secure.url}/latest.txt`, { caFile: "/nonexistent/ca.pem" }));
    expect(e.exitCode).toBe(ExitCode.Usage);
    expect(e.message).toBe("--ca-file /nonexistent/ca.pem cannot be read (ENOENT)");
    expect(secure.requests.length).toBe(from);
  });
});

describe("self-upgrade of a build without a release key", () => {
  it("refuses before any request (exit 3)", async () => {
    const { selfUpgrade } = await import("../../../cli/self/self-upgrade");
    const server = await startServer();
    try {
      const e = await userErrorOf(
        selfUpgrade({
          binary: "/nonexistent/rootless-k8s",
          current: "1.0.0",
          base: server.url,
          arch: "amd64",
          publicKey: "",
          dryRun: true,
          force: true,
          allowDowngrade: false,
          signal: new AbortController().signal,
          progress: () => undefined,
        }),
      );
      expect(e.exitCode).toBe(ExitCode.Refused);
      expect(e.message).toBe("this rootless-k8s was built without a release signing key, so it cannot verify a release");
      expect(server.requests).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
