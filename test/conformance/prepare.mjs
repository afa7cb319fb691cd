// Lays out what the conformance scenario needs below OPT/conformance (copied into the VM guest with
// the rest of OPT):
//   bin/e2e.test, bin/ginkgo   upstream's suite and runner, built from their Go modules at the
//                              versions test/e2e/build/components.json names (suite "conformance")
//   images/                    the suite's extra images (test/e2e/images/conformance-images.mjs)
//   lists/<name>.focus         one ginkgo regular expression per list (full: focus.txt, ci: ci.txt),
//                              the names escaped; lists/skips.regex the tests skipped for a missing image,
//                              lists/one-node.regex those skipped when the cluster has one node
//   lists/<name>.txt, skips.txt, one-node.txt, expected-none.txt   the lists themselves, for the summary
// Called from test/e2e/prepare.mjs --conformance.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildAll, loadManifest } from "../e2e/build/build-components.mjs";
import { buildConformanceImages } from "../e2e/images/conformance-images.mjs";
import { focusRegex, readNames, readReasons } from "./lists.mjs";
import { focusText, suiteVersion, upstreamList } from "./select.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const REASONS = ["skips.txt", "one-node.txt", "expected-none.txt"];
/** The lists of tests: every .txt here but the ones with reasons (focus, ci, network, ...). */
const lists = () =>
  readdirSync(here)
    .filter((f) => f.endsWith(".txt") && !REASONS.includes(f))
    .map((f) => f.slice(0, -4));

export function prepareConformance({ opt, buildCache, cache, busybox, agnhost, say = console.log }) {
  // focus.txt must be what select.mjs gives for the suite's version (a version bump rewrites it).
  const b = suiteVersion();
  if (readFileSync(join(here, "focus.txt"), "utf8") !== focusText(upstreamList(b), b))
    throw new Error(`test/conformance/focus.txt is not the list for ${b.module}@${b.version}: run node test/conformance/select.mjs`);
  const ids = loadManifest()
    .builds.filter((b) => b.suite === "conformance")
    .map((b) => b.id);
  const s = buildAll({ cache: buildCache, only: ids, say });
  if (s.failed.length) throw new Error(`conformance builds failed: ${s.failed.join("; ")}`);
  const built = (id, name) => {
    const b = s.builds.find((x) => x.id === id);
    const bin = b?.binaries.find((x) => x.name === name);
    if (!bin) throw new Error(`no ${name} in the ${id} build`);
    return { ...bin, from: `${b.module}@${b.version}`, module: b.module, version: b.version };
  };
  const dir = join(opt, "conformance");
  for (const d of ["bin", "images", "lists"]) mkdirSync(join(dir, d), { recursive: true, mode: 0o755 });
  const suite = built("e2e-test", "e2e.test");
  for (const [id, name] of [
    ["e2e-test", "e2e.test"],
    ["ginkgo", "ginkgo"],
  ])
    copyFileSync(built(id, name).path, join(dir, "bin", name));
  const images = buildConformanceImages({
    out: join(dir, "images"),
    kubernetes: { module: suite.module, version: suite.version },
    agnhost: { path: agnhost },
    agnhostPrev: built("agnhost-prev", "agnhost"),
    nnp: built("nonewprivs", "nnp"),
    busybox,
    debs: join(cache, "debs-images"),
  });
  say(`conformance images: ${images.map((i) => i.name).join(", ")}`);
  for (const l of lists()) {
    const names = readNames(join(here, `${l}.txt`));
    copyFileSync(join(here, `${l}.txt`), join(dir, "lists", `${l}.txt`));
    writeFileSync(join(dir, "lists", `${l}.focus`), focusRegex(names));
  }
  for (const f of REASONS) copyFileSync(join(here, f), join(dir, "lists", f));
  for (const f of ["skips", "one-node"])
    writeFileSync(join(dir, "lists", `${f}.regex`), focusRegex([...readReasons(join(here, `${f}.txt`)).keys()]));
  say(`prepared ${dir}: e2e.test (${suite.version}), ginkgo, ${images.length} images, lists ${lists().join(", ")}`);
  return { dir, images };
}
