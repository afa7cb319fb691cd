# shellcheck shell=bash
# The [Conformance] lists (issue 37: one file per scenario group).
# Sourced by test/e2e/scenarios.sh after lib/scenario-lib.sh; its scenarios run by name.
# shellcheck disable=SC2317,SC2034,SC2153 # functions called by name; globals shared across the files

scenario_conformance() {
  local clist=${E2E_CONFORMANCE_LIST:-focus} procs=${E2E_CONFORMANCE_PROCS:-4} out rc=0 skip expected=() f imgs=() line nodes skips=()
  local want=${E2E_CONFORMANCE_NODES:-$([ "${E2E_CONFORMANCE_LIST:-}" = multinode ] && echo 2 || echo 1)}
  local ltxt=$CONF/lists/$clist.txt lfocus=$CONF/lists/$clist.focus shard=() first
  out=$(dirname "$REPORT")/conformance-$ROUTE
  [ -x "$CONF/bin/e2e.test" ] || { fail conformance "no suite in $CONF: prepare.mjs --conformance lays it out (make conformance)"; return; }
  check conformance "the node is running before the suite starts" rk8s status
  for f in "$CONF"/images/*.tar; do imgs+=("$f"); done
  check conformance "rootless-k8s image load: the suite's ${#imgs[@]} extra images ($CONF/images)" rk8s image load "${imgs[@]}"
  rm -rf "$out"
  install -d -m 0755 -o "$E2E_USER" -g "$E2E_USER" "$out"
  # A shard (E2E_CONFORMANCE_SHARD=K/N): every Nth test of the list, from the Kth.
  if [ -n "${E2E_CONFORMANCE_SHARD:-}" ]; then
    check conformance "E2E_CONFORMANCE_SHARD=$E2E_CONFORMANCE_SHARD: $("$E2E_OPT/node" "$CONF/shard.mjs" --list "$ltxt" --shard "$E2E_CONFORMANCE_SHARD" --out "$out" 2>&1)" \
      test -s "$out/list.focus" || return
    ltxt=$out/list.txt lfocus=$out/list.focus shard=(--shard "$E2E_CONFORMANCE_SHARD")
  fi
  case $want in
    1) ;;
    2) worker_up conformance || { worker_down conformance; return; } ;;
    *) fail conformance "E2E_CONFORMANCE_NODES=$want: 1 or 2 (the e2e has one second host)"; return ;;
  esac
  nodes=$(kc get nodes --no-headers | grep -c ' Ready ')
  check conformance "the cluster has $want Ready node(s): $nodes" test "$nodes" = "$want"
  # On two nodes CoreDNS runs on the worker only: every lookup of a test pod on the first node
  # crosses the overlay through the kube-dns Service (issue 36).
  first=$(kc get nodes -o 'jsonpath={.items[?(@.metadata.name!="e2e-worker")].metadata.name}')
  [ "$nodes" = 2 ] && check conformance "CoreDNS pinned to the worker (e2e-worker), apart from the first node ($first)" coredns_to e2e-worker
  # A test that needs two nodes is skipped by name on one (one-node.txt), and runs on two.
  skip=$(cat "$CONF/lists/skips.regex")
  skips=(--skips "$CONF/lists/skips.txt")
  if [ "$nodes" -lt 2 ]; then
    skip=$(printf '%s\n' "$skip" "$(cat "$CONF/lists/one-node.regex")" | grep . | paste -sd'|')
    skips+=(--skips "$CONF/lists/one-node.txt")
  fi
  info conformance "running $(grep -cv '^#\|^$' "$ltxt") tests of the $clist list${shard[1]:+ (shard ${shard[1]})} on $nodes node(s) with $procs ginkgo processes; output $out"
  as_user "$CONF/bin/ginkgo" --procs="$procs" --timeout=4h --no-color --silence-skips --output-dir="$out" --junit-report=junit.xml \
    --focus="$(cat "$lfocus")" ${skip:+--skip="$skip"} "$CONF/bin/e2e.test" -- \
    --kubeconfig="$CONFIG/admin.kubeconfig" --kubectl-path="$SHARE/versions/current/bin/kubectl" --report-dir="$out" \
    >"$out/ginkgo.log" 2>&1 || rc=$?
  info conformance "ginkgo exited $rc; log $out/ginkgo.log ($(tail -3 "$out/ginkgo.log" | tr -s '\n' ' '))"
  # A failed list keeps the node's side of the story beside the suite's: the kubelet's and the
  # runtime's logs (rootless-k8s logs), which the events in ginkgo.log only summarize.
  if [ "$rc" != 0 ]; then
    for f in kubelet runtime; do save_logs "$f" "$out/$f.log" 200000; done
    info conformance "the node's logs for the failure: $out/kubelet.log ($(wc -l <"$out/kubelet.log") lines), $out/runtime.log ($(wc -l <"$out/runtime.log") lines)"
  fi
  [ "$nodes" = 2 ] && check conformance "CoreDNS back on the first node, as installed" coredns_back "$first"
  [ "$want" = 2 ] && worker_down conformance
  [ -s "$out/junit.xml" ] || { fail conformance "ginkgo wrote no JUnit report ($out/junit.xml)"; return; }
  [ "$MODE" = none ] && expected=(--expected "$CONF/lists/expected-none.txt")
  "$E2E_OPT/node" "$CONF/summarize.mjs" --junit "$out/junit.xml" --list "$ltxt" "${skips[@]}" "${shard[@]}" \
    "${expected[@]}" --route "$ROUTE" --mode "$MODE" --nodes "$nodes" --json "$out/summary.json" >"$out/summary.txt" 2>&1
  rc=$?
  sed 's/^/    | /' "$out/summary.txt"
  line=$(tail -1 "$out/summary.txt")
  report "{\"route\":\"$ROUTE\",\"conformance\":$(cat "$out/summary.json" 2>/dev/null || echo null)}"
  if [ "$rc" = 0 ]; then
    if [ "$MODE" = none ]; then pass conformance "$line: every failure is one mode none predicts (test/conformance/expected-none.txt)"
    else pass conformance "$line: no test failed (mode $MODE predicts none)"; fi
  else fail conformance "$line: failures no gives-up line predicts (FAILED above; $out/junit.xml)"; fi
}
