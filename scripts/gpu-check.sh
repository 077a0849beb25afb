#!/bin/sh
# The GPU check in one command: runs the GPU tests, compute-sanitizer and the benchmark
# (symcoll and NCCL, bf16 sum, 2 ranks) on the GPU machine and writes logs.
#
#   scripts/gpu-check.sh pack BUILD_DIR DEST   (where it was built) copy the programs and
#                                              the runtime libraries they need into DEST
#                                              (and, with UCX_CUDA_SLIM=DIR, a CUDA-enabled
#                                              UCX from scripts/ucx-cuda-build.sh, DIR/slim,
#                                              into DEST/ucx-cuda for the ucxcuda step)
#   scripts/gpu-check.sh run DIR OUT [STEPS]   (on the GPU machine) DIR is a packed tree or
#                                              a build tree; logs go to OUT. STEPS: any of
#                                              env tests nettests sanitize bench nccl
#                                              (default all), netbench netsanitize (GPU memory
#                                              across 2 simulated nodes), hierbench (2 x 2:
#                                              hierarchical over the GPUs vs flat), ucxcuda (the same
#                                              with the packed CUDA-enabled UCX), direct
#                                              directbench (the direct path with it), coll
#                                              (the collectives' cases), variants confirm
#                                              nccl_quick, tune (symcoll_tune, host and
#                                              CUDA memory); STACKS_AFTER=S: stacks of a step
#                                              still running after S seconds
#
# tests runs test_cuda (one node); nettests runs test_cuda_net (across simulated nodes)
# one case per step (NETCASES to choose some). netbench: symcoll vs NCCL on its socket
# transport, 2 x 1 and 2 x 2 simulated nodes (NETBENCH_MAX, REPEATS).
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
    # the test programs are built by make check, not make: build them here, so that the
    # tree packed is never older than the library beside it
    ${MAKE:-make} -C "$b" tests/test_cuda tests/test_cuda_net >/dev/null || return 1
    mkdir -p "$d/bin" "$d/lib"
    for p in tests/.libs/test_cuda tests/.libs/test_cuda_net tools/.libs/symcoll_perf \
             tools/symcoll_run tools/.libs/symcoll_info tools/.libs/symcoll_tune \
             bench/nccl_allreduce_peer; do
        test -f "$b/$p" && cp "$b/$p" "$d/bin/"
    done
    cp -L "$b/.libs/libsymcoll.so.0" "$d/lib/"
    if test -n "${UCX_CUDA_SLIM:-}"; then
        rm -rf "$d/ucx-cuda" && cp -a "$UCX_CUDA_SLIM" "$d/ucx-cuda"
        # ucx_perftest for scripts/ucx-cuda-probe.sh, and libraries it needs that the GPU
        # machine's image may lack
        if test -f "$UCX_CUDA_SLIM/../install/bin/ucx_perftest"; then
            cp "$UCX_CUDA_SLIM/../install/bin/ucx_perftest" "$d/ucx-cuda/bin/"
            mkdir -p "$d/ucx-cuda/extra"
            for l in libnuma.so.1 libgomp.so.1; do
                f=`ldconfig -p | awk -v l=$l '$1 == l { print $NF; exit }'`
                test -n "$f" && cp -L "$f" "$d/ucx-cuda/extra/"
            done
        fi
    fi
    # not installed on the GPU machine's image (or, for PMIx and what it needs, maybe of
    # another version than the one the library was linked with)
    for l in libsubunit.so.0 libhwloc.so.15 libpmix.so.2 libmunge.so.2 libevent_core-2.1.so.7 \
             libevent_pthreads-2.1.so.7; do
        f=`ldconfig -p | awk -v l=$l '$1 == l { print $NF; exit }'`
        test -n "$f" && cp -L "$f" "$d/lib/"
    done
    ls -l "$d/bin" "$d/lib"
}

# Every thread's stack of our programs still running, into file $1: the GPU machine's
# image has no gdb, but cuda-gdb attaches to a running process (as root).
stacks() {
    gdb=`command -v cuda-gdb || echo /usr/local/cuda/bin/cuda-gdb`
    for p in `for n in test_cuda test_cuda_net symcoll_perf symcoll_info nccl_allreduce_; do
                  pgrep -x $n; done`; do
        echo "######## pid $p: `tr '\0' ' ' </proc/$p/cmdline 2>/dev/null`"
        timeout 60 "$gdb" -q -batch -p "$p" -ex "thread apply all bt 30" 2>&1 |
            grep -v '^\[New \|^warning: \|libcudadebugger'
    done >>"$1" 2>&1
}

# run NAME TIMEOUT COMMAND...: log to $out/NAME.log, one status line to $out/summary.
# With STACKS_AFTER=SECONDS, a step still running after that long leaves the stacks of
# its processes in the log (once a step): how hangs inside the CUDA driver were found.
step() {
    name=$1; limit=$2; shift 2
    t0=`date +%s`
    timeout -k 10 "$limit" "$@" >"$out/$name.log" 2>&1 &
    pid=$!
    if test -n "${STACKS_AFTER:-}"; then
        dumped=
        while kill -0 $pid 2>/dev/null; do
            sleep 2
            if test -z "$dumped" && test `expr \`date +%s\` - $t0` -gt "$STACKS_AFTER"; then
                dumped=1
                stacks "$out/$name.stacks"
            fi
        done
    fi
    wait $pid
    rc=$?
    test -f "$out/$name.stacks" && cat "$out/$name.stacks" >>"$out/$name.log" &&
        rm -f "$out/$name.stacks"
    echo "$name: rc=$rc (`expr \`date +%s\` - $t0` s)" | tee -a "$out/summary"
    collect
    return $rc
}

# The GPU machine returns at most 8 files: the logs go into one, all.txt, as each step
# ends, so that a run stopped early still returns what it did.
collect() {
    for f in "$out"/*.log; do
        test -f "$f" || continue
        echo "=================== `basename $f`"; cat "$f"
        rm -f "$f"
    done >>"$out/all.txt"
}

run() {
    dir=$1; out=$2; steps=${3:-"env tests nettests sanitize bench nccl"}
    mkdir -p "$out"
    : >"$out/summary"
    : >"$out/all.txt"
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
              ls -l "$bin"; ldd "$bin"/test_cuda "$bin"/test_cuda_net; echo "nccl: $nccl_lib"; ls "$nccl_lib" 2>/dev/null;
              which compute-sanitizer; } >"$out/env.log" 2>&1
            ;;
        tests)
            # one node; the cross-node cases (test_cuda_net) run in the nettests step
            step tests ${TEST_TIMEOUT:-900} "$bin"/test_cuda
            ;;
        coll)
            # the collectives on one node, one case a step: their own kernels
            # (SYMCOLL_CUDA_COLL=auto, set by the native cases) and as all-reduces. 1-70 s
            # each with 2-3 ranks on one H200 (docs/performance.md).
            for c in ${COLLCASES:-coll_native2 coll_native3 coll_graph_native coll_mismatch barrier_stream coll2 coll3 coll_graph}; do
                step "$c" 180 env CK_RUN_CASE=$c "$bin"/test_cuda
            done
            ;;
        nettests)
            # GPU memory across 2 simulated nodes (UCX over TCP on loopback), one case a
            # step. The timeout cases take 22-23 s, each types case 10-12 s, the others
            # 1-4 s on 2 x H200.
            # The limits add up to far more; they only bound a case that hangs.
            for c in ${NETCASES:-net_capture net_mixed net_kill net_mismatch net_abort net_abort_idle net_timeout net_pool net_types net_hier net_types_plain net_types_channels3 net_hier_types net_hier_mixed net_hier_flat net_hier_plain net_hier_kill net_hier_abort net_hier_timeout net_hier_pool net_coll net_coll_hier net_barrier}; do
                case $c in net_types*|net_hier_types|net_coll*) l=240 ;; net_hier*) l=180 ;; net_pool) l=120 ;; *) l=100 ;; esac
                step "$c" $l env CK_RUN_CASE=$c "$bin"/test_cuda_net
            done
            ;;
        ucxcuda)
            # UCX built with CUDA (packed into $dir/ucx-cuda): does UCX see CUDA memory, does
            # symcoll say so (the data is still staged), and do the cross-node cases pass
            # with it
            u=$dir/ucx-cuda
            if ! test -d "$u/lib"; then
                echo "ucxcuda: no $u (pack with UCX_CUDA_SLIM=...)" | tee -a "$out/summary"
                continue
            fi
            step ucx_info 60 env LD_LIBRARY_PATH=$u/lib:$LD_LIBRARY_PATH sh -c \
                "$u/bin/ucx_info -v; $u/bin/ucx_info -d | grep -iE 'transport|device|memory' | grep -iE 'cuda|tcp' "
            # with UCX_TLS=tcp,self UCX does not report CUDA memory (staged, as with the
            # distributions' UCX); with cuda_copy it does, and pins the host pool's
            # segments itself (the data is still staged, and the CUDA pool is not
            # registered with UCX: docs/performance.md)
            for tls in tcp,self tcp,self,cuda_copy; do
                v=`echo $tls | tr -c 'a-z0-9\n' _`
                step ucxcuda_info_$v 60 env LD_LIBRARY_PATH=$u/lib:$LD_LIBRARY_PATH \
                    UCX_MODULE_DIR=$u/lib/ucx UCX_TLS=$tls \
                    "$bin"/symcoll_run --sim-nodes 2 -n 2 --timeout 50 "$bin"/symcoll_info -t
                for c in ${UCXCUDA_CASES:-net_types net_kill net_hier}; do
                    step ucxcuda_${c}_$v 240 env LD_LIBRARY_PATH=$u/lib:$LD_LIBRARY_PATH \
                        UCX_MODULE_DIR=$u/lib/ucx UCX_TLS=$tls CK_RUN_CASE=$c "$bin"/test_cuda_net
                done
            done
            ;;
        direct|directbench)
            # The direct path (UCX puts into the peers' CUDA pool) with the CUDA-enabled
            # UCX packed into $dir/ucx-cuda (UCX 1.22: pack with UCX_CUDA_SLIM=...), for
            # each UCX_TLS of DIRECT_TLS: the topology report of 2 simulated nodes (the
            # probe per peer), then the net_direct cases (DIRECT_CASES), or (directbench)
            # symcoll_perf direct against staged, alternating, 2 x 1, bf16 sum.
            u=$dir/ucx-cuda
            if ! test -d "$u/lib"; then
                echo "$s: no $u (pack with UCX_CUDA_SLIM=...)" | tee -a "$out/summary"
                continue
            fi
            U="env LD_LIBRARY_PATH=$u/lib:$LD_LIBRARY_PATH UCX_MODULE_DIR=$u/lib/ucx"
            step direct_ucx_info 60 $U sh -c \
                "$u/bin/ucx_info -v; $u/bin/ucx_info -d | grep -iE 'transport|memory types' "
            R="$bin/symcoll_run --sim-nodes 2"
            W='SYMCOLL_LOCAL_RANK=$SYMCOLL_RANK exec "$0" "$@"'
            P="$bin/symcoll_perf -m cuda -d bfloat16 -o sum -n ${DIRECT_ITERS:-20} -r ${REPEATS:-3}"
            for tls in ${DIRECT_TLS:-cuda_ipc,cuda_copy,tcp,self tcp,cuda_copy,self}; do
                v=`echo $tls | tr -c 'a-z0-9\n' _`
                step direct_info_$v 90 $U UCX_TLS=$tls SYMCOLL_LOG_LEVEL=info \
                    $R -n 2 --timeout 80 sh -c "$W" "$bin"/symcoll_info -t -a
                if test $s = direct; then
                    for c in ${DIRECT_CASES:-net_direct_types net_direct_chunks net_direct_pool net_direct_mixed net_direct_coll net_direct_kill net_direct_abort net_direct_timeout net_direct_mismatch net_direct_auto net_direct_one_queue net_direct_hier_types net_direct_hier_mixed net_direct_hier_kill net_direct_hier_abort net_direct_hier_timeout}; do
                        step ${c}_$v 240 $U UCX_TLS=$tls CK_RUN_CASE=$c "$bin"/test_cuda_net
                    done
                    continue
                fi
                for i in `seq ${DIRECT_ROUNDS:-2}`; do
                    step direct_perf_${v}_$i 200 $U UCX_TLS=$tls SYMCOLL_CUDA_NET_PATH=direct \
                        $R -n 2 --timeout 190 sh -c "$W" $P -b 1K -e ${DIRECT_MAX:-64M} -f 4
                    step direct_pool_perf_${v}_$i 200 $U UCX_TLS=$tls SYMCOLL_CUDA_NET_PATH=direct \
                        $R -n 2 --timeout 190 sh -c "$W" $P -b 1K -e ${DIRECT_MAX:-64M} -f 4 -P
                    step staged_perf_${v}_$i 200 $U UCX_TLS=$tls SYMCOLL_CUDA_NET_PATH=staged \
                        $R -n 2 --timeout 190 sh -c "$W" $P -b 1K -e ${DIRECT_MAX:-64M} -f 4
                done
            done
            ;;
        netsanitize)
            step net_memcheck ${SAN_TIMEOUT:-300} env CK_RUN_CASE=net_mixed CK_FORK=no compute-sanitizer \
                --tool memcheck --target-processes all "$bin"/test_cuda_net
            ;;
        netbench)
            # bf16 sum, symcoll and NCCL alternating (NETBENCH_ROUNDS times): 2 ranks as 2
            # nodes x 1 GPU, then symcoll on 4 as 2 nodes x 2 (NCCL there too with
            # NETBENCH_NCCL_2X2=1: it took 6.8 ms a 64 KB call and ran past its limit).
            # Both programs run through $W: GPU = rank % GPUs (symcoll_perf would take the
            # rank on the node, putting both 2x1 ranks on GPU 0; NCCL's driver already does
            # rank % GPUs), and NCCL gets the simulated node as NCCL_HOSTID, so it sees the
            # same two hosts as symcoll (and no "duplicate GPU" with 2 ranks a GPU). NCCL is
            # held to its socket transport on loopback. symcoll's small-call kernel is also
            # measured off (SYMCOLL_CUDA_NET_KERNEL_MAX=0), up to 64K. About 2 minutes a round.
            R="$bin/symcoll_run --sim-nodes 2"
            W='SYMCOLL_LOCAL_RANK=$SYMCOLL_RANK NCCL_HOSTID=$SYMCOLL_HOST_ID exec "$0" "$@"'
            P="$bin/symcoll_perf -m cuda -d bfloat16 -o sum -r ${REPEATS:-5}"
            N="$bin/nccl_allreduce_peer -d bfloat16 -o sum -r ${REPEATS:-5}"
            NCCLNET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1"
            NCCLINFO="NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"
            step netinfo 40 $R -n 2 --timeout 30 "$bin"/symcoll_info -v -a
            for i in `seq ${NETBENCH_ROUNDS:-1}`; do
                step net_perf_2x1_$i 160 env SYMCOLL_LOG_LEVEL=info $R -n 2 --timeout 150 sh -c "$W" \
                    $P -b 1K -e ${NETBENCH_MAX:-256M} -f 4
                # NCCL's own log: one file (the device returns few files)
                step net_nccl_2x1_$i 160 env $NCCLNET $NCCLINFO $R -n 2 --timeout 150 sh -c "$W" \
                    $N -b 1K -e ${NETBENCH_MAX:-256M} -f 4
                step net_perf_2x1_nokernel_$i 60 env SYMCOLL_CUDA_NET_KERNEL_MAX=0 \
                    $R -n 2 --timeout 50 sh -c "$W" $P -b 1K -e 64K -f 4
            done
            step net_perf_2x2 100 $R -n 4 --timeout 90 sh -c "$W" $P -b 1K -e 64M -f 4
            if test -n "${NETBENCH_NCCL_2X2:-}"; then
                step net_nccl_2x2 100 env $NCCLNET $R -n 4 --timeout 90 sh -c "$W" $N -b 1K -e 64M -f 4
            fi
            ;;
        hierbench)
            # 2 nodes x 2 GPUs (GPU = rank % GPUs: each simulated node has both GPUs, so
            # ranks of different nodes share a GPU): hierarchical over each node's GPUs
            # against the flat staged path (SYMCOLL_HIER_MIN=1G: every rank stages all of
            # its data, hier through the host pool per chunk), alternating
            # (HIERBENCH_ROUNDS), bf16 sum
            R="$bin/symcoll_run --sim-nodes 2"
            W='SYMCOLL_LOCAL_RANK=$SYMCOLL_RANK exec "$0" "$@"'
            P="$bin/symcoll_perf -m cuda -d bfloat16 -o sum -r ${REPEATS:-3}"
            step hierinfo 40 $R -n 4 --timeout 30 sh -c "$W" "$bin"/symcoll_info -t -a
            for i in `seq ${HIERBENCH_ROUNDS:-1}`; do
                step hier_perf_2x2_$i 150 env SYMCOLL_LOG_LEVEL=info $R -n 4 --timeout 140 sh -c "$W" \
                    $P -b 1K -e ${HIERBENCH_MAX:-256M} -f 4
                step hier_flat_2x2_$i 150 env SYMCOLL_HIER_MIN=1G $R -n 4 --timeout 140 sh -c "$W" \
                    $P -b 1K -e ${HIERBENCH_MAX:-256M} -f 4
                # hierarchical at every size (by default not below 16M here, where ranks
                # of the two simulated nodes share each GPU)
                step hier_forced_2x2_$i 150 env SYMCOLL_ALGO=hier $R -n 4 --timeout 140 sh -c "$W" \
                    $P -b 1K -e ${HIERBENCH_MAX:-256M} -f 4
            done
            ;;
        tune)
            # symcoll_tune on this machine, host and CUDA memory, quick: 2 ranks on one
            # node, then 2 x 1 simulated nodes (CUDA staged through the host); the file
            # (tune.txt, and the plots, come back) loaded by symcoll_info -a, and
            # symcoll_perf on CUDA memory without and with it, alternating (TUNE_ROUNDS)
            tf=$out/tune.txt
            R="$bin/symcoll_run --timeout 280"
            rm -f "$tf"
            step tune_1x2 300 $R -n 2 "$bin"/symcoll_tune --quick --mem all -o "$tf" \
                --plot "$out/tune_1x2.png"
            step tune_2x1 300 $R -n 2 --sim-nodes 2 "$bin"/symcoll_tune --quick --mem all \
                -o "$tf" --plot "$out/tune_2x1.png"
            cat "$tf" >"$out/tunefile.log"
            for l in "-n 2" "-n 2 --sim-nodes 2"; do
                v=`echo $l | tr -c 'a-z0-9\n' _`
                step tuneinfo$v 60 env SYMCOLL_TUNE_FILE="$tf" $R $l "$bin"/symcoll_info -a
                for i in `seq ${TUNE_ROUNDS:-2}`; do
                    P="$bin/symcoll_perf -m cuda -b 8 -e 1M -f 4 -n 20 -r 3"
                    step tuneperf_builtin$v$i 150 $R $l $P
                    step tuneperf_tuned$v$i 150 env SYMCOLL_TUNE_FILE="$tf" $R $l $P
                done
            done
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
            P="$bin/symcoll_run -n 2 --timeout 280 $bin/symcoll_perf -m cuda -d bfloat16 -o sum -r ${REPEATS:-5}"
            step perf_eager 300 $P -b 1K -e ${BENCH_MAX:-256M} -f 2
            step perf_pool 300 $P -b 1K -e ${BENCH_MAX:-256M} -f 2 -P
            step perf_graph 300 $P -b 1K -e 16M -f 2 -G
            step perf_pool_graph 300 $P -b 1K -e 16M -f 2 -P -G
            ;;
        variants)
            # what limits what: one-shot at every size, and the grid size
            P="$bin/symcoll_run -n 2 --timeout 280 $bin/symcoll_perf -m cuda -d bfloat16 -o sum -r ${REPEATS:-5}"
            step var_oneshot 300 env SYMCOLL_ALGO=oneshot $P -b 64K -e 256M -f 4
            step var_twoshot 300 env SYMCOLL_ALGO=twoshot $P -b 1K -e 1M -f 4
            step var_nb64 300 env SYMCOLL_CUDA_NBLOCKS=64 $P -b 1M -e 256M -f 4
            step var_noll 300 env SYMCOLL_CUDA_LL_MAX=0 $P -b 1K -e 256K -f 4
            step var_oneshot_graph 300 env SYMCOLL_ALGO=oneshot $P -b 1K -e 16M -f 4 -G
            ;;
        confirm)
            # short confirmation of a build: bench at factor 4, grid variant, NCCL eager
            P="$bin/symcoll_run -n 2 --timeout 200 $bin/symcoll_perf -m cuda -d bfloat16 -o sum -r ${REPEATS:-5}"
            N="$bin/symcoll_run -n 2 --timeout 200 $bin/nccl_allreduce_peer -d bfloat16 -o sum -r ${REPEATS:-5}"
            step c_eager 220 $P -b 1K -e 256M -f 4
            step c_pool 220 $P -b 1K -e 256M -f 4 -P
            step c_graph 120 $P -b 1K -e 4M -f 4 -G
            step c_pool_nb264 220 env SYMCOLL_CUDA_NBLOCKS=264 $P -b 1M -e 256M -f 4 -P
            step c_nccl 220 $N -b 1K -e 256M -f 4
            step c_nccl_wg 120 $N -b 1K -e 4M -f 4 -W -G
            ;;
        nccl_quick)
            N="$bin/symcoll_run -n 2 --timeout 100 $bin/nccl_allreduce_peer -d bfloat16 -o sum -r 3"
            step nccl_quick 120 $N -b 1K -e 4M -f 4
            step nccl_quick_wg 120 $N -b 1K -e 64K -f 4 -W -G
            ;;
        nccl)
            N="$bin/symcoll_run -n 2 --timeout 280 $bin/nccl_allreduce_peer -d bfloat16 -o sum -r ${REPEATS:-5}"
            step nccl_eager 300 $N -b 1K -e ${BENCH_MAX:-256M} -f 2
            step nccl_window 300 $N -b 1K -e ${BENCH_MAX:-256M} -f 2 -W
            step nccl_graph 300 $N -b 1K -e 16M -f 2 -G
            step nccl_window_graph 300 $N -b 1K -e 16M -f 2 -W -G
            ;;
        esac
    done
    collect
    cat "$out/summary"
}

case ${1:-} in
pack) shift; pack "$@" ;;
run) shift; run "$@" ;;
*) sed -n '2,17p' "$0"; exit 2 ;;
esac
