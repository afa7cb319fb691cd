// The memory the node's Go components hold at rest (issue 33). Pure.
//
// Go's garbage collector lets the heap grow to (1 + GOGC/100) times what is live before it
// collects: with the default GOGC=100, up to twice. Measured on the host route (mode none, an idle
// node with DNS, storage and metrics, the sum of PSS 60 s after the add-ons were Ready): GOGC=100
// 1166 MiB, GOGC=50 1102 MiB (kube-apiserver alone 296 -> 251 MiB), GOGC=25 1064 MiB; the node's
// CPU time at rest was the same within the noise of the three (about 11% of one core). 50 takes
// most of what pays and leaves the collector's work under load near Go's own default.
import type { Plan } from "./plan";

/** GOGC for every Go process the units start (the env file, cli/render/index.ts). */
export const GO_GC_PERCENT = 50;

export function decideMemory(): NonNullable<Plan["memory"]> {
  return {
    goGC: GO_GC_PERCENT,
    reasons: [
      `GOGC=${GO_GC_PERCENT} for the node's Go components (Go's default is 100): the heap is collected at 1.5 times what is live instead of 2, about 60 MiB less at rest, mostly in kube-apiserver; GOGC in env.local overrides it`,
    ],
  };
}
