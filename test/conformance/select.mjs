// Writes test/conformance/focus.txt: the [Conformance] tests `make conformance` runs, chosen from
// upstream's own list (test/conformance/testdata/conformance.yaml of the Kubernetes module at the
// version the suite is built from, test/e2e/build/components.json "e2e-test").
//
//   node test/conformance/select.mjs [--check]     --check: exit 1 when focus.txt is not what the rules give
//
// The rules (issue 10):
//   every test of sig-node, sig-apps, sig-cli and sig-auth;
//   sig-api-machinery, except the aggregator test (it runs upstream's sample-apiserver image beside
//     registry.k8s.io/etcd, neither of which is built here; see skips.txt);
//   sig-storage's emptyDir, configMap, secret, projected and downwardAPI volume tests;
//   sig-network's Services and DNS tests (test/e2e/network/service.go and dns.go).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { moduleDir } from "../e2e/images/build-images.mjs";
import { readNames } from "./lists.mjs";

const here = dirname(fileURLToPath(import.meta.url));

const STORAGE_VOLUMES = /^test\/e2e\/common\/storage\/(empty_dir|configmap_volume|secrets_volume|downwardapi_volume|projected_\w+)\.go$/;
const NETWORK = /^test\/e2e\/network\/(service|dns)\.go$/;
const ALL = new Set(["sig-node", "sig-apps", "sig-cli", "sig-auth", "sig-api-machinery"]);
/** Left out of the focus list, with the reason (they also stand in skips.txt). */
export const LEFT_OUT = [{ file: /^test\/e2e\/apimachinery\/aggregator\.go$/, why: "aggregator: sample-apiserver and etcd images" }];

export function suiteVersion() {
  const m = JSON.parse(readFileSync(join(here, "..", "e2e", "build", "components.json"), "utf8"));
  const b = m.builds.find((x) => x.id === "e2e-test");
  if (!b) throw new Error("test/e2e/build/components.json has no e2e-test entry");
  return b;
}

/** upstream's conformance.yaml at the suite's version: [{testname, codename, file, release}] */
export function upstreamList(b = suiteVersion()) {
  return parse(readFileSync(join(moduleDir(b.module, b.version), "test/conformance/testdata/conformance.yaml"), "utf8"));
}

export const sigOf = (codename) => /^\[(sig-[a-z-]+)\]/.exec(codename)?.[1] ?? "";

export function chosen(t) {
  if (LEFT_OUT.some((x) => x.file.test(t.file))) return false;
  const sig = sigOf(t.codename);
  if (ALL.has(sig)) return true;
  if (sig === "sig-storage") return STORAGE_VOLUMES.test(t.file);
  if (sig === "sig-network") return NETWORK.test(t.file);
  return false;
}

export function focusText(list, b) {
  const picked = list.filter(chosen);
  const bySig = new Map();
  for (const t of picked) {
    const s = sigOf(t.codename);
    bySig.set(s, [...(bySig.get(s) ?? []), t.codename]);
  }
  const lines = [
    `# The [Conformance] tests make conformance runs: ${picked.length} of the ${list.length} in upstream's`,
    `# test/conformance/testdata/conformance.yaml at ${b.module}@${b.version}. Written by`,
    "# test/conformance/select.mjs (its rules are at its top); one test name a line, as ginkgo prints it.",
  ];
  for (const [sig, names] of [...bySig].sort()) {
    lines.push("", `# ${sig} (${names.length})`, ...names.sort());
  }
  return `${lines.join("\n")}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const b = suiteVersion();
  const text = focusText(upstreamList(b), b);
  const file = join(here, "focus.txt");
  if (process.argv.includes("--check")) {
    const now = readFileSync(file, "utf8");
    if (now !== text) {
      console.error("test/conformance/focus.txt is not what select.mjs gives; run node test/conformance/select.mjs");
      process.exit(1);
    }
  } else {
    writeFileSync(file, text);
  }
  console.log(`${file}: ${readNames(file).length} tests`);
}
