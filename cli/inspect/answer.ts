// How long status and doctor --node wait for one answer from the node (API server, CRI, RootlessKit).
// 3 s was too short on a busy machine: on the e2e's emulated VM, while another node installed beside
// it, the API server answered /readyz a moment after `status` gave up and called the node unhealthy.
export const ANSWER_MS = 10_000;
