// Golden tests: the plan and every rendered file for each mode × runtime × network combination,
// planned from real fixture hosts. Secrets and certificates differ on every run, so their content
// is replaced by a marker (their paths, modes and kubeconfig structure stay compared).
// After an intended change: RK8S_UPDATE_GOLDEN=1 npx vitest run test/golden, then review the diff.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import type { Pki } from "../../cli/render/pki";
import { generatePki, renderNode, type RenderedFile } from "../../cli/render/index";
import { withNodeRange } from "../../cli/plan/network";

/** The first /24 of a pod network (10.244.0.0/16 → 10.244.0.0/24): what the first node is given. */
const firstRange = (pods: string) => `${pods.split("/")[0]}/24`;
import { isCI } from "../../cli/ui/output";
import { COMBOS, comboFacts, planCombo } from "./combos";

const GOLDEN_DIR = join(import.meta.dirname, "files");
const UPDATE = process.env.RK8S_UPDATE_GOLDEN === "1";
const CI = isCI(process.env);

/** Kubeconfig structure without the generated certificate data. */
function stableKubeconfig(text: string): string {
  const doc = YAML.parse(text) as { clusters: { cluster: Record<string, string> }[]; users: { user: Record<string, string> }[] };
  for (const c of doc.clusters) c.cluster["certificate-authority-data"] = "<generated>";
  for (const u of doc.users) for (const k of Object.keys(u.user)) u.user[k] = "<generated>";
  return YAML.stringify(doc);
}

function stableContent(f: RenderedFile): string {
  if (f.kind === "pki") return "<generated key or certificate>\n";
  if (f.kind === "kubeconfig") return stableKubeconfig(f.content.toString());
  return f.content.toString();
}

export function goldenText(files: RenderedFile[]): string {
  return files.map((f) => `=== ${f.path} (0${f.mode.toString(8)} ${f.kind}${f.unit ? ` ${f.unit}` : ""})\n${stableContent(f)}`).join("\n");
}

let pki: Pki | null = null;

describe("golden: every mode × runtime × network combination from real fixture hosts", () => {
  beforeAll(() => mkdirSync(GOLDEN_DIR, { recursive: true }));

  for (const combo of COMBOS) {
    it(`${combo.name} (${combo.host}): ${combo.why}`, async () => {
      const facts = await comboFacts(combo);
      const result = planCombo(combo, facts);
      let text: string;
      if (result.refusal) {
        expect(combo.expect, `unexpected refusal: ${result.refusal.message}`).toBe("refused");
        expect(result.refusal.exitCode).toBe(3);
        text = `refused (exit ${result.refusal.exitCode}): ${result.refusal.message}\nfix: ${result.refusal.fix ?? ""}\n`;
      } else {
        expect(combo.expect).toBe("plan");
        pki ??= await generatePki(result.plan);
        // The PKI's SANs depend on the plan: regenerate what does not fit, reusing the rest. The files
        // are the node's once registered: the controller-manager gave it the pod network's first /24
        // (its CNI network is written then; a dry run shows the plan's files without it).
        const registered = { ...result.plan, cidrs: withNodeRange(result.plan.cidrs, firstRange(result.plan.cidrs.pods)) };
        const files = renderNode(registered, await generatePki(registered, { existing: pki }));
        text = `${JSON.stringify(result.plan, null, 2)}\n\n${goldenText(files)}`;
      }
      const file = join(GOLDEN_DIR, `${combo.name}.golden`);
      // A missing golden file is written for review (then committed); under CI it is a failure,
      // since a test that writes its own expectation cannot fail.
      if (!existsSync(file) && !UPDATE)
        expect(CI, `golden ${file} is missing: run the golden tests without CI, review it, commit it`).toBe(false);
      if (UPDATE || !existsSync(file)) writeFileSync(file, text);
      expect(text, `golden ${file} differs: review, then RK8S_UPDATE_GOLDEN=1`).toBe(readFileSync(file, "utf8"));
    }, 30_000);
  }

  it("covers every mode × runtime × network driver (docker: dockerd's own network)", () => {
    const names = new Set(COMBOS.map((c) => c.name));
    for (const mode of ["delegated", "none"]) {
      for (const runtime of ["containerd", "crio"])
        for (const net of ["slirp4netns", "pasta", "builtin"]) expect(names).toContain(`${mode}-${runtime}-${net}`);
      expect(names).toContain(`${mode}-docker`);
    }
  });

  it("renders byte-identical files from the same plan and PKI (re-install changes nothing)", async () => {
    const combo = COMBOS.find((c) => c.name === "none-containerd-slirp4netns")!;
    const facts = await comboFacts(combo);
    const a = planCombo(combo, facts);
    const b = planCombo(combo, await comboFacts(combo));
    expect(a.plan).toEqual(b.plan);
    const keys = await generatePki(a.plan!);
    expect(renderNode(b.plan!, keys)).toEqual(renderNode(a.plan!, keys));
    expect(renderNode(a.plan!, await generatePki(a.plan!, { existing: keys }))).toEqual(renderNode(a.plan!, keys));
  });
});
