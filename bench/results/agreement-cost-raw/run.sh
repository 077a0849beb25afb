#!/bin/sh
# A/B of the all-reduce before this session's changes (old, c7fa98d) and after (new):
# host memory, doubles, sum, 8 B and 64 KiB, 2 ranks on 1 node and on 2 simulated nodes
# (UCX over TCP loopback), alternating, 6 rounds; symcoll_run binds each rank to a core.
cd "$(dirname "$0")"
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n
for round in 1 2 3 4 5 6; do
  for shape in 1 2; do
    for v in old new; do
      LD_LIBRARY_PATH=$PWD/$v:$PWD/lib ./symcoll_run -n 2 --sim-nodes $shape --timeout 120 \
        ./$v/symcoll_perf -m host -d float64 -o sum -b 8 -e 64K -f 8192 -r 5 --csv |
        grep -v '^size' | sed "s/^/$round,$shape,$v,/"
    done
  done
done
