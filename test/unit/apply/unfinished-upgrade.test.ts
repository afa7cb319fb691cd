// Which run an upgrade resumes (issue 35): only an upgrade that did not finish, marked by the upgrade
// itself, and the plan it rolls back to only when it is the set the node ran before. A failed install
// on the same set is never taken for one (a rollback there would go down a version).
import { describe, expect, it } from "vitest";
import { unfinishedUpgrade, type Receipt, type ReceiptSet } from "../../../cli/apply/receipt";

const set = (id: string, kubernetes: string): ReceiptSet => ({ id, binDir: `/v/${id}/bin`, versions: { kubernetes }, binaries: [] });
const A = set("1.36.3-aaaa", "1.36.3");
const B = set("1.37.2-bbbb", "1.37.2");
const planOf = (s: ReceiptSet) => ({ versions: { id: s.id, components: s.versions } });

/** What an upgrade from A to B that was killed after it recorded its plan leaves. */
function killedUpgrade(over: Partial<Receipt> = {}): Receipt {
  return {
    state: "installing",
    current: B.id,
    previous: A.id,
    sets: { [A.id]: A, [B.id]: B },
    plan: planOf(B),
    previousPlan: planOf(A),
    upgradingFrom: A.id,
    ...over,
  } as Receipt;
}

describe("unfinishedUpgrade", () => {
  it("an upgrade killed after it switched: resumed from the set it left, whose plan a failure rolls back to", () => {
    expect(unfinishedUpgrade(killedUpgrade(), B.id)).toEqual({ left: A, leftPlan: planOf(A) });
  });

  it("also when it was killed before the receipt named the new set current", () => {
    expect(unfinishedUpgrade(killedUpgrade({ current: A.id, previous: null }), B.id)?.left).toBe(A);
  });

  it("a failed install on the set the node runs is not an upgrade, even after an earlier upgrade from A", () => {
    const failedInstall = killedUpgrade({ state: "failed", upgradingFrom: undefined });
    expect(unfinishedUpgrade(failedInstall, B.id)).toBeNull();
  });

  it("nothing to resume: an installed node, an upgrade to another set, a set that is gone", () => {
    expect(unfinishedUpgrade(killedUpgrade({ state: "installed" }), B.id)).toBeNull();
    expect(unfinishedUpgrade(killedUpgrade(), "1.38.0-cccc")).toBeNull();
    expect(unfinishedUpgrade(killedUpgrade({ sets: { [B.id]: B } }), B.id)).toBeNull();
  });

  it("a rollback plan counts only when it is the left set's", () => {
    expect(unfinishedUpgrade(killedUpgrade({ previousPlan: planOf(B) }), B.id)).toEqual({ left: A, leftPlan: null });
    expect(unfinishedUpgrade(killedUpgrade({ previousPlan: undefined }), B.id)).toEqual({ left: A, leftPlan: null });
  });
});
