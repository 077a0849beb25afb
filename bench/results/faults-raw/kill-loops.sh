#!/bin/bash
# The kill test across 2 simulated nodes x 2 repeated with the protocol forced to put
# and at its default (auto: active messages on TCP), Debian's UCX 1.13, from the
# repository root after a build in build/; one log per protocol, a line per run.
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n
N=${N:-40}
for p in put auto; do
  L=${OUT:-bench/results/faults-raw}/kill-large-2x2-$p.txt
  : > $L
  for i in $(seq $N); do
    echo "=== run $i SYMCOLL_NET_PROTOCOL=$p ($(date -u +%T))" >> $L
    SYMCOLL_NET_PROTOCOL=$p CK_RUN_CASE=test_kill_large_2x2 timeout 120 build/tests/test_fault >> $L 2>&1
    echo "=== rc=$? run $i" >> $L
  done
  echo "$p: $(grep -c '^=== rc=0' $L) of $N passed; UCX aborts: $(grep -c 'Fatal: unexpected error' $L)"
done
