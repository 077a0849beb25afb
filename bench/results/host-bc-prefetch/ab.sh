#!/bin/bash
# Eager broadcast inside a node, 2 ranks (RANKS), 8 B - 2 KiB: two builds of the library
# (BASE and NEW: folders holding libsymcoll.so.0, run through BUILD's symcoll_perf) and
# Open MPI (ob1 + vader), interleaved by round; EXTRA: more symcoll_perf options.
# Usage: ab.sh BUILD BASE NEW [ROUNDS]
# prints "variant round bytes us wrong".
B=$(cd "$1" && pwd); R=${4:-5}; N=${RANKS:-2}
A="--coll broadcast -d float64 -o sum -b 8 -e 2K -f 4 -r 5 $EXTRA --csv"
for r in $(seq 1 "$R"); do
    for v in base new; do
        lib=$2; [ $v = new ] && lib=$3
        LD_LIBRARY_PATH=$lib "$B"/tools/symcoll_run -n $N --bind-to core "$B"/tools/.libs/symcoll_perf -m host $A 2>/dev/null |
            awk -F, -v v=$v -v r=$r '$1+0>0{print v, r, $1, $7, $10}'
    done
    mpirun --allow-run-as-root -np $N --bind-to core --mca pml ob1 --mca btl self,vader \
        "$B"/bench/mpi_allreduce_peer $A 2>/dev/null | awk -F, -v r=$r '$1+0>0{print "openmpi", r, $1, $7, $10}'
done
