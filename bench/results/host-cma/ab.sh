#!/bin/bash
# Broadcast of plain buffers inside a node, 2 ranks: copied by address (the default from
# SYMCOLL_HOST_CMA_MIN) against staged (SYMCOLL_HOST_CMA_MIN=0) against Open MPI (ob1 +
# vader, which reads with CMA above 4 KiB), interleaved by round; out of place and in
# place. Usage: ab.sh BUILD_DIR [ROUNDS]; prints "variant round size placement us".
B=$(cd "$1" && pwd); R=${2:-3}
A="--coll broadcast -d float64 -o sum -b ${B0:-128K} -e ${E0:-8M} -f 2 -r 5 --inplace $EXTRA --csv"
row() { awk -F, -v v="$1" -v r="$2" '$1+0>0 && $10=="0"{print v, r, $1, $6, $7} $1+0>0 && $10!="0"{print v, r, $1, $6, "WRONG", $10}'; }
for r in $(seq 1 "$R"); do
    "$B"/tools/symcoll_run -n 2 --bind-to core "$B"/tools/symcoll_perf -m host $A 2>/dev/null | row address $r
    SYMCOLL_HOST_CMA_MIN=0 "$B"/tools/symcoll_run -n 2 --bind-to core "$B"/tools/symcoll_perf -m host $A 2>/dev/null | row staged $r
    mpirun --allow-run-as-root -np 2 --bind-to core --mca pml ob1 --mca btl self,vader \
        "$B"/bench/mpi_allreduce_peer $A 2>/dev/null | row openmpi $r
done
