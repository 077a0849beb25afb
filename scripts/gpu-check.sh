#!/bin/sh
# The GPU check in one command: runs the GPU tests, compute-sanitizer and the benchmark
# (symcoll and NCCL, bf16 sum, 2 ranks) on the GPU machine and writes logs.
#
#   scripts/gpu-check.sh pack BUILD_DIR DEST   (where it was built) copy the programs and
#                                              the runtime libraries they need into DEST
#   scripts/gpu-check.sh run DIR OUT [STEPS]   (on the GPU machine) DIR is a packed tree or
#                                              a build tree; logs go to OUT. STEPS: any of
#                                              env tests sanitize bench nccl (default all)
#
# NVLink multicast stays off (it can take the host's GPUs out of service): the variables
# below are exported for every program this script starts.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export UCX_WARN_UNUSED_ENV_VARS=n UCX_TLS=${UCX_TLS:-tcp,self}
# a kernel that waits longer than this for a peer gives up (and the call reports it)
export SYMCOLL_TIMEOUT=${SYMCOLL_TIMEOUT:-60}

pack() {
    b=$1; d=$2
    mkdir -p "$d/bin" "$d/lib"
    for p in tests/.libs/test_cuda tools/.libs/symcoll_perf tools/symcoll_run \
             bench/nccl_allreduce_peer; do
        test -f "$b/$p" && cp "$b/$p" "$d/bin/"
    done
    cp -L "$b/.libs/libsymcoll.so.0" "$d/lib/"
    # not installed on the GPU machine's image
    for l in libsubunit.so.0 libhwloc.so.15; do
        f=`ldconfig -p | awk -v l=$l '$1 == l { print $NF; exit }'`
        test -n "$f" && cp -L "$f" "$d/lib/"
    done
    ls -l "$d/bin" "$d/lib"
}

# run NAME TIMEOUT COMMAND...: log to $out/NAME.log, one status line to $out/summary
step() {
    name=$1; limit=$2; shift 2
    t0=`date +%s`
    timeout -k 10 "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    echo "$name: rc=$rc (`expr \`date +%s\` - $t0` s)" | tee -a "$out/summary"
    return $rc
}

run() {
    dir=$1; out=$2; steps=${3:-"env tests sanitize bench nccl"}
    mkdir -p "$out"
    : >"$out/summary"
    if test -d "$dir/lib"; then
        bin=$dir/bin; export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    else
        bin=$dir; export LD_LIBRARY_PATH=$dir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
    nccl_lib=`python3 -c 'import nvidia.nccl,os;print(os.path.join(os.path.dirname(nvidia.nccl.__file__),"lib"))' 2>/dev/null`
    test -n "$nccl_lib" && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$nccl_lib
    for s in $steps; do
        case $s in
        env)
            { date; uname -a; nvidia-smi; nvidia-smi topo -m; nvidia-smi -q | grep -iE "driver|cuda version|product name|bus id" ;
              ls -l "$bin"; ldd "$bin"/test_cuda; echo "nccl: $nccl_lib"; ls "$nccl_lib" 2>/dev/null;
              which compute-sanitizer; } >"$out/env.log" 2>&1
            ;;
        tests)
            step tests ${TEST_TIMEOUT:-900} "$bin"/test_cuda
            ;;
        sanitize)
            # small runs: the bf16 bit-identity case (one-shot and two-shot) under each tool
            step memcheck ${SAN_TIMEOUT:-300} env CK_RUN_CASE=bits CK_FORK=no compute-sanitizer --tool memcheck \
                --target-processes all "$bin"/test_cuda
            step racecheck ${SAN_TIMEOUT:-300} env CK_RUN_CASE=bits CK_FORK=no compute-sanitizer --tool racecheck \
                --target-processes all "$bin"/test_cuda
            ;;
        bench)
            # symcoll, bf16 sum, 2 ranks: plain buffers, pool buffers, CUDA graph
            P="$bin/symcoll_run -n 2 -t 280 $bin/symcoll_perf -m cuda -d bfloat16 -o sum -r ${REPEATS:-5}"
            step perf_eager 300 $P -b 1K -e ${BENCH_MAX:-256M} -f 2
            step perf_pool 300 $P -b 1K -e ${BENCH_MAX:-256M} -f 2 -P
            step perf_graph 300 $P -b 1K -e 16M -f 2 -G
            step perf_pool_graph 300 $P -b 1K -e 16M -f 2 -P -G
            ;;
        variants)
            # what limits what: one-shot at every size, and the grid size
            P="$bin/symcoll_run -n 2 -t 280 $bin/symcoll_perf -m cuda -d bfloat16 -o sum -r ${REPEATS:-5}"
            step var_oneshot 300 env SYMCOLL_ALGO=oneshot $P -b 64K -e 256M -f 4
            step var_twoshot 300 env SYMCOLL_ALGO=twoshot $P -b 1K -e 1M -f 4
            step var_nb64 300 env SYMCOLL_CUDA_NBLOCKS=64 $P -b 1M -e 256M -f 4
            step var_noll 300 env SYMCOLL_CUDA_LL_MAX=0 $P -b 1K -e 256K -f 4
            step var_oneshot_graph 300 env SYMCOLL_ALGO=oneshot $P -b 1K -e 16M -f 4 -G
            ;;
        confirm)
            # short confirmation of a build: bench at factor 4, grid variant, NCCL eager
            P="$bin/symcoll_run -n 2 -t 200 $bin/symcoll_perf -m cuda -d bfloat16 -o sum -r ${REPEATS:-5}"
            N="$bin/symcoll_run -n 2 -t 200 $bin/nccl_allreduce_peer -d bfloat16 -o sum -r ${REPEATS:-5}"
            step c_eager 220 $P -b 1K -e 256M -f 4
            step c_pool 220 $P -b 1K -e 256M -f 4 -P
            step c_graph 120 $P -b 1K -e 4M -f 4 -G
            step c_pool_nb264 220 env SYMCOLL_CUDA_NBLOCKS=264 $P -b 1M -e 256M -f 4 -P
            step c_nccl 220 $N -b 1K -e 256M -f 4
            step c_nccl_wg 120 $N -b 1K -e 4M -f 4 -W -G
            ;;
        nccl_quick)
            N="$bin/symcoll_run -n 2 -t 100 $bin/nccl_allreduce_peer -d bfloat16 -o sum -r 3"
            step nccl_quick 120 $N -b 1K -e 4M -f 4
            step nccl_quick_wg 120 $N -b 1K -e 64K -f 4 -W -G
            ;;
        nccl)
            N="$bin/symcoll_run -n 2 -t 280 $bin/nccl_allreduce_peer -d bfloat16 -o sum -r ${REPEATS:-5}"
            step nccl_eager 300 $N -b 1K -e ${BENCH_MAX:-256M} -f 2
            step nccl_window 300 $N -b 1K -e ${BENCH_MAX:-256M} -f 2 -W
            step nccl_graph 300 $N -b 1K -e 16M -f 2 -G
            step nccl_window_graph 300 $N -b 1K -e 16M -f 2 -W -G
            ;;
        esac
    done
    # the GPU machine returns at most 8 files: one log with everything, the summary
    for f in "$out"/*.log; do
        test -f "$f" || continue
        echo "=================== `basename $f`"; cat "$f"
    done >"$out/all.txt"
    rm -f "$out"/*.log
    cat "$out/summary"
}

case ${1:-} in
pack) shift; pack "$@" ;;
run) shift; run "$@" ;;
*) sed -n '2,14p' "$0"; exit 2 ;;
esac
