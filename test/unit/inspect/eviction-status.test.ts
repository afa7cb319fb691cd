// Whether the eviction manager observes the node, from the kubelet's summary API (issue 43). The
// fixture is a real one: kubelet 1.36.3 on the e2e host route (mode none, containerd 2.3.7,
// overlayfs on ext4 of /dev/vda), read with `kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary`
// on 2026-12-05. The blind case is that summary without what cAdvisor could not give before
// localStorageCapacityIsolation was turned on: node.fs and the runtime's imageFs.
import { readFileSync } from "node:fs";
import * as https from "node:https";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { evictionStatus, summaryObservation } from "../../../cli/inspect/eviction-status";
import { apiClient, readKubeconfig } from "../../../cli/clients/kubernetes";
import { listen, type Listening } from "../../helpers/net";
import { makeTlsFixture, type TlsFixture } from "../../helpers/tls-fixture";

const real = readFileSync(join(import.meta.dirname, "..", "..", "fixtures", "kubelet", "summary-1.36.3-host-route.json"), "utf8");
const blind = (() => {
  const s = JSON.parse(real) as { node: { fs?: unknown; runtime?: { imageFs?: unknown } } };
  delete s.node.fs;
  delete s.node.runtime?.imageFs;
  return JSON.stringify(s);
})();

describe("summaryObservation", () => {
  it("a real kubelet's summary: observing, with what it sees", () => {
    expect(summaryObservation(real)).toEqual({
      observing: true,
      detail: "memory 19781 MiB available, disk 19% available, images 19% available",
    });
  });

  it("without the node's file system and the image file system: not observing, and the conditions unknown", () => {
    const r = summaryObservation(blind);
    expect(r.observing).toBe(false);
    expect(r.detail).toBe(
      "the kubelet's summary lacks the node's file system and the image file system: the eviction manager observes nothing, so the pressure conditions are unknown",
    );
  });

  it("an answer that is no summary is not observing", () => {
    expect(summaryObservation("<html>")).toEqual({ observing: false, detail: "the kubelet's summary is not JSON" });
  });
});

describe("evictionStatus through the API server's proxy", () => {
  let tls: TlsFixture;
  let server: Listening;
  let answer: { status: number; body: string } = { status: 200, body: real };
  const paths: string[] = [];
  beforeAll(async () => {
    tls = makeTlsFixture();
    server = await listen(
      https.createServer(
        { key: tls.serverKey, cert: tls.serverCert, ca: tls.ca, requestCert: true, rejectUnauthorized: true },
        (req, res) => {
          paths.push(req.url ?? "");
          res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body);
        },
      ),
    );
  });
  afterAll(() => server.close());

  it("reads /api/v1/nodes/NAME/proxy/stats/summary, and says when it cannot", async () => {
    const client = apiClient(await readKubeconfig(tls.kubeconfig(server.url)));
    expect((await evictionStatus(client, "n1")).observing).toBe(true);
    expect(paths.at(-1)).toBe("/api/v1/nodes/n1/proxy/stats/summary");
    answer = { status: 503, body: "{}" };
    expect(await evictionStatus(client, "n1")).toEqual({ observing: null, detail: "the kubelet's summary: HTTP 503" });
    answer = { status: 200, body: blind };
    expect((await evictionStatus(client, "n1")).observing).toBe(false);
  });
});
