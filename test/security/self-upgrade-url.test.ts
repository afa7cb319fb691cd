// Issue 34: self-upgrade's refusal of a plain-http release base names the URL as the user gave it
// (its path kept), with its credentials taken out and its control characters escaped, and nothing
// is fetched from it. Run as an ordinary user against the bundled CLI, with a real server on
// 127.0.0.1 standing where the URL points, which must see no request at all.
import * as http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_BUNDLE } from "../helpers/cli";
import { listen } from "../helpers/net";
import { runAs, testUser, USER_PATH } from "../helpers/user";

const user = testUser("rk8s-sb-selfurl");

describe("self-upgrade refuses a plain-http --base-url and names it as given (issue 34)", () => {
  let server: http.Server;
  let port = 0;
  const requests: string[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      requests.push(req.url ?? "");
      res.end("0.0.1\n");
    });
    port = (await listen(server, { host: "127.0.0.1" })).port;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  const run = (args: string[], env: Record<string, string> = {}) => {
    const home = user.newHome();
    return runAs(
      user,
      process.execPath,
      [CLI_BUNDLE, "self-upgrade", ...args],
      { HOME: home, PATH: USER_PATH, NO_COLOR: "1", ROOTLESS_K8S_NO_UPDATE_CHECK: "1", ...env },
      { timeoutMs: 30_000 },
    );
  };

  /** The refusal line of stderr, and checks every refusal shares. */
  const refusal = (r: { code: number | null; stderr: string }, secret: string): string => {
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).not.toMatch(/\bat .*\.(js|ts|cjs):\d+|This is a bug/);
    expect(r.stderr).not.toContain(secret);
    // No raw control character reaches the terminal (layout newlines aside).
    expect(r.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    const line = r.stderr.split("\n").find((l) => l.includes("refused the plain-http release base"));
    expect(line, r.stderr).toBeDefined();
    return line as string;
  };

  it("--base-url with a path, credentials and an escape sequence", async () => {
    const given = `http://mirror-user:s3cret@127.0.0.1:${port}/mirror/rootless-k8s/releases\u001b[2J`;
    const r = await run(["--base-url", given]);
    const line = refusal(r, "s3cret");
    expect(line).toContain(
      `refused the plain-http release base http://127.0.0.1:${port}/mirror/rootless-k8s/releases\\x1b[2J (--base-url)`,
    );
    expect(line).not.toContain("mirror-user");
    expect(requests).toEqual([]);
  });

  it("--base-url with a path only: the path is in the message", async () => {
    const r = await run(["--base-url", `http://127.0.0.1:${port}/internal/releases/`]);
    expect(refusal(r, "no-secret-here")).toContain(`release base http://127.0.0.1:${port}/internal/releases/ (--base-url)`);
    expect(requests).toEqual([]);
  });

  it("ROOTLESS_K8S_DOWNLOAD_URL with a path and credentials", async () => {
    const r = await run([], { ROOTLESS_K8S_DOWNLOAD_URL: `http://u:p4ss@127.0.0.1:${port}/env/releases` });
    expect(refusal(r, "p4ss")).toContain(`release base http://127.0.0.1:${port}/env/releases (ROOTLESS_K8S_DOWNLOAD_URL)`);
    expect(requests).toEqual([]);
  });
});
