// What a node run by `rootless-k8s up` gives up against one in the user's systemd: said by doctor,
// by the plan install prints, and by `up --help` (one sentence, one place).
export const UP_GIVES_UP =
  "nothing starts it at boot or at login unless your own init, CI step or batch script runs `rootless-k8s up --detach`, and mode none applies (no cgroup of its own to delegate)";
