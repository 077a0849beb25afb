#!/bin/sh
# symcoll_run: the variables each rank gets, simulated nodes, CPU binding, tagged output,
# stdin, deprecated spellings, and what happens when a rank fails, is killed, hangs past
# --timeout, or the launcher is told to stop. Ranks are small `sh -c` programs; every
# launch runs under timeout(1) so a hang is a failure.
. "${top_srcdir:-.}/tests/testlib.sh"
run="$top_builddir/tools/symcoll_run"
make_tmp run-test
# generous: the machine may be loaded; a hung launcher is killed and counted a failure
guard="timeout -s KILL 240"
failures=0
ncases=0

if [ ! -x "$run" ]; then
    echo "FAIL: $run not built"
    exit 99
fi

fail() {
    echo "FAIL: $case: $*"
    if [ -s "$tmp/err" ]; then
        echo "  stderr of symcoll_run:"
        sed 's/^/    /' "$tmp/err"
    fi
    failures=$((failures + 1))
}

# launch ARGS...: runs symcoll_run, output in $tmp/out and $tmp/err, status in $rc
launch() {
    ncases=$((ncases + 1))
    $guard "$run" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

expect_rc() {
    [ "$rc" -eq "$1" ] || fail "exit status $rc, expected $1"
}

expect_err() {
    grep -E -q "$1" "$tmp/err" || fail "stderr does not match /$1/"
}

# --- all ranks succeed; each gets its own rank and the job's size, address, cookie
case="all ranks succeed"
launch -n 4 sh -c 'echo "$SYMCOLL_RANK $SYMCOLL_NRANKS $SYMCOLL_ADDR $SYMCOLL_COOKIE"'
expect_rc 0
[ -s "$tmp/err" ] && fail "unexpected output on stderr"
sort -n "$tmp/out" >"$tmp/sorted"
[ "$(awk '{ print $1 }' "$tmp/sorted" | tr '\n' ' ')" = "0 1 2 3 " ] ||
    fail "ranks seen: $(awk '{ print $1 }' "$tmp/sorted" | tr '\n' ' ')"
[ "$(awk '{ print $2 }' "$tmp/sorted" | sort -u)" = "4" ] || fail "SYMCOLL_NRANKS differs from 4"
[ "$(awk '{ print $3 }' "$tmp/sorted" | sort -u | wc -l)" -eq 1 ] ||
    fail "ranks got different SYMCOLL_ADDR"
grep -E -q '^0 4 127\.0\.0\.1:[1-9][0-9]* [0-9a-f]{16}$' "$tmp/sorted" ||
    fail "SYMCOLL_ADDR/SYMCOLL_COOKIE not as expected: $(head -1 "$tmp/sorted")"
[ "$(awk '{ print $4 }' "$tmp/sorted" | sort -u | wc -l)" -eq 1 ] ||
    fail "ranks got different cookies"
first_cookie=$(awk 'NR == 1 { print $4 }' "$tmp/sorted")
launch -n 1 sh -c 'echo "$SYMCOLL_COOKIE"'
[ "$(cat "$tmp/out")" != "$first_cookie" ] || fail "two jobs got the same cookie"

# --- rank 0 inherits the socket listening on SYMCOLL_ADDR's port (no other process can
# take the port before rank 0 listens); the other ranks get no such descriptor
case="rank 0 inherits the rendezvous socket"
launch -n 3 sh -c '
    if [ -z "$SYMCOLL_LISTEN_FD" ]; then echo "$SYMCOLL_RANK none"; exit 0; fi
    ino=$(readlink "/proc/$$/fd/$SYMCOLL_LISTEN_FD" | sed -n "s/^socket:\[\([0-9]*\)\]$/\1/p")
    port=$(printf "%04X" "${SYMCOLL_ADDR##*:}")
    # /proc/net/tcp: local address (hex ip:port), state 0A = LISTEN, inode in column 10
    st=$(awk -v p=":$port" -v i="$ino" "\$2 ~ p\"\$\" && \$10 == i { print \$4 }" /proc/net/tcp)
    echo "$SYMCOLL_RANK fd ${st:-missing}"'
expect_rc 0
sort -n "$tmp/out" >"$tmp/sorted"
[ "$(tr '\n' ' ' <"$tmp/sorted")" = "0 fd 0A 1 none 2 none " ] ||
    fail "expected a listening socket on rank 0 only: $(tr '\n' ' ' <"$tmp/sorted")"
# the launcher's own SYMCOLL_LISTEN_FD reaches no rank; a job of one rank (which never
# listens) gets no socket
SYMCOLL_LISTEN_FD=abc launch -n 2 sh -c 'echo "$SYMCOLL_RANK ${SYMCOLL_LISTEN_FD:-none}"'
expect_rc 0
grep -q '^1 none$' "$tmp/out" || fail "rank 1 got SYMCOLL_LISTEN_FD: $(tr '\n' ' ' <"$tmp/out")"
grep -q '^0 [0-9][0-9]*$' "$tmp/out" || fail "rank 0 got no descriptor: $(tr '\n' ' ' <"$tmp/out")"
launch -n 1 sh -c 'echo "${SYMCOLL_LISTEN_FD:-none} $(ls -l /proc/$$/fd | grep -c socket:)"'
[ "$(cat "$tmp/out")" = "none 0" ] || fail "a job of one rank got a socket: $(cat "$tmp/out")"

# --- a rank exits with an error: named, others stopped, its status passed through
case="rank exits with an error"
launch -n 3 sh -c 'if [ "$SYMCOLL_RANK" = 1 ]; then exit 3; fi; exec sleep 300'
expect_rc 3
expect_err '^symcoll_run: rank 1 \(pid [0-9]+\) exited with status 3$'
[ "$(grep -c 'exited with status\|killed by signal' "$tmp/err")" -eq 1 ] ||
    fail "ranks stopped by the launcher must not be reported as failures"

# --- a rank is killed by a signal
case="rank killed by a signal"
launch -n 3 sh -c 'if [ "$SYMCOLL_RANK" = 2 ]; then kill -KILL $$; fi; exec sleep 300'
expect_rc 137
expect_err '^symcoll_run: rank 2 \(pid [0-9]+\) killed by signal 9 \(Killed\)$'

# --- a real rank, waiting in the library's bootstrap for a peer that died, is stopped
case="real rank stopped"
info="$top_builddir/tools/symcoll_info"
if [ -x "$info" ]; then
    launch -n 2 sh -c 'if [ "$SYMCOLL_RANK" = 1 ]; then kill -KILL $$; fi; exec "$1" -t' x "$info"
    expect_rc 137
    expect_err '^symcoll_run: rank 1 \(pid [0-9]+\) killed by signal 9 \(Killed\)$'
fi

# --- a rank that ignores SIGTERM is killed after the grace period; the ranks' own
#     children (here a background sleep) go too
case="stop ignores SIGTERM"
launch -n 2 --grace 1 sh -c '
    sleep 300 & echo $! >"'"$tmp"'/child.$SYMCOLL_RANK"
    trap "" TERM
    if [ "$SYMCOLL_RANK" = 0 ]; then
        while [ ! -s "'"$tmp"'/child.1" ]; do sleep 0.1; done
        exit 4
    fi
    while :; do sleep 0.2; done'
expect_rc 4
expect_err '^symcoll_run: rank 0 \(pid [0-9]+\) exited with status 4$'
for r in 0 1; do
    if [ -s "$tmp/child.$r" ] && kill -0 "$(cat "$tmp/child.$r")" 2>/dev/null; then
        fail "the background child of rank $r is still running"
        kill -KILL "$(cat "$tmp/child.$r")" 2>/dev/null
    fi
done

# --- a successful job prints nothing of its own, and what its ranks left running in
#     the background does not outlive it
case="all ranks succeed, leftovers stopped"
rm -f "$tmp"/child.*
launch -n 2 sh -c 'sleep 300 & echo $! >"'"$tmp"'/child.$SYMCOLL_RANK"'
expect_rc 0
[ -s "$tmp/err" ] && fail "unexpected output on stderr"
for r in 0 1; do
    if [ ! -s "$tmp/child.$r" ]; then
        fail "rank $r did not start its background child"
    elif kill -0 "$(cat "$tmp/child.$r")" 2>/dev/null; then
        fail "the background child of rank $r outlived the job"
        kill -KILL "$(cat "$tmp/child.$r")" 2>/dev/null
    fi
done

# --- simulated nodes: blocks of ranks, the first nodes one rank larger
case="--sim-nodes 2"
launch -n 5 --sim-nodes 2 sh -c \
    'echo "$SYMCOLL_RANK $SYMCOLL_HOST_ID $SYMCOLL_LOCAL_RANK $SYMCOLL_LOCAL_SIZE"'
expect_rc 0
sort -n "$tmp/out" >"$tmp/sorted"
[ "$(awk '{ printf "%s:%s/%s ", $1, $3, $4 }' "$tmp/sorted")" = "0:0/3 1:1/3 2:2/3 3:0/2 4:1/2 " ] ||
    fail "local ranks/sizes: $(awk '{ printf "%s:%s/%s ", $1, $3, $4 }' "$tmp/sorted")"
[ "$(awk '{ print $2 }' "$tmp/sorted" | sort -u | wc -l)" -eq 2 ] ||
    fail "expected 2 distinct SYMCOLL_HOST_ID values: $(tr '\n' ';' <"$tmp/sorted")"
groups=$(awk '{ if ($2 != prev) { printf "%s", (NR > 1 ? "|" : ""); prev = $2 }
               printf "%s ", $1 }' "$tmp/sorted")
[ "$groups" = "0 1 2 |3 4 " ] || fail "node blocks are '$groups', expected '0 1 2 |3 4 '"

case="--sim-nodes 3 of 4 ranks"
launch -n 4 --sim-nodes 3 sh -c 'echo "$SYMCOLL_RANK $SYMCOLL_HOST_ID"'
expect_rc 0
sort -n "$tmp/out" >"$tmp/sorted"
groups=$(awk '{ if ($2 != prev) { printf "%s", (NR > 1 ? "|" : ""); prev = $2 }
               printf "%s ", $1 }' "$tmp/sorted")
[ "$groups" = "0 1 |2 |3 " ] || fail "node blocks are '$groups', expected '0 1 |2 |3 '"

case="no --sim-nodes leaves SYMCOLL_HOST_ID alone"
SYMCOLL_HOST_ID=mine launch -n 2 sh -c \
    'echo "$SYMCOLL_HOST_ID $SYMCOLL_RANK $SYMCOLL_LOCAL_RANK $SYMCOLL_LOCAL_SIZE"'
expect_rc 0
[ "$(sort "$tmp/out" | tr '\n' ' ')" = "mine 0 0 2 mine 1 1 2 " ] ||
    fail "SYMCOLL_HOST_ID or local ranks not as expected: $(tr '\n' ' ' <"$tmp/out")"

# --- deprecated spellings still work, with a line on stderr
for old in "-N" "--nodes"; do
    case="deprecated $old"
    launch -n 3 "$old" 2 sh -c 'echo "$SYMCOLL_RANK $SYMCOLL_LOCAL_RANK $SYMCOLL_LOCAL_SIZE"'
    expect_rc 0
    [ "$(sort -n "$tmp/out" | tr '\n' ' ')" = "0 0 2 1 1 2 2 0 1 " ] ||
        fail "local ranks: $(sort -n "$tmp/out" | tr '\n' ' ')"
    expect_err "^symcoll_run: $old is deprecated and will be removed: use --sim-nodes K "
done
case="deprecated -t"
launch -n 1 -t 1 --grace 1 sleep 300
expect_rc 124
expect_err '^symcoll_run: -t is deprecated and will be removed: use --timeout S '
expect_err '^symcoll_run: timeout after 1 s'

# --- CPU binding: each rank prints the CPUs the kernel lets it use
# awk: ex(LIST) gives "0-2,5" as "0 1 2 5 " (the kernel's lists are in ascending order)
ex='function ex(l,  n, a, b, i, j, s) {
    n = split(l, a, ","); s = ""
    for (i = 1; i <= n; i++)
        if (split(a[i], b, "-") == 2) { for (j = b[1]; j <= b[2]; j++) s = s j " " }
        else if (a[i] != "") s = s a[i] " "
    return s }'
cpus() {
    awk -v l="$1" "$ex"' BEGIN { printf "%s", ex(l) }'
}
show_cpus='echo "$SYMCOLL_RANK $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
allowed=$(cpus "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)")
# cores among the allowed CPUs (hardware threads of one core count once)
ncores=$(for c in $allowed; do
    cat "/sys/devices/system/cpu/cpu$c/topology/thread_siblings_list" 2>/dev/null || echo "c$c"
done | sort -u | wc -l)
# rank_cpus R: the CPUs rank R printed
rank_cpus() {
    awk -v r="$1" "$ex"' $1 == r { printf "%s", ex($2) }' "$tmp/out"
}
# verbose_cpus R: the CPUs -v reported for rank R
verbose_cpus() {
    awk -v r="$1" "$ex"' $1 == "symcoll_run:" && $2 == "rank" && $3 == r && $4 == "pid" {
        printf "%s", ex($NF) }' "$tmp/err"
}

case="binding: one core per rank (default, ranks <= cores)"
n=$ncores
[ "$n" -gt 4 ] && n=4
launch -n "$n" -v sh -c "$show_cpus"
expect_rc 0
expect_err "^symcoll_run: binding each rank to a core \\($n rank\\(s\\), $ncores core\\(s\\)\\)\$"
seen=
for r in $(seq 0 $((n - 1))); do
    got=$(rank_cpus "$r")
    [ -n "$got" ] || fail "rank $r printed no CPUs"
    [ "$got" = "$(verbose_cpus "$r")" ] ||
        fail "rank $r has cpus '$got', -v says '$(verbose_cpus "$r")'"
    grep -q "^symcoll_run: rank $r pid [0-9]*: core $r, cpus " "$tmp/err" ||
        fail "-v does not say rank $r is on core $r"
    for c in $got; do
        case " $allowed" in *" $c "*) ;; *) fail "rank $r got cpu $c, not allowed here" ;; esac
        case " $seen" in *" $c "*) fail "cpu $c given to two ranks" ;; esac
    done
    seen="$seen$got"
done

case="binding: ranks outnumber cores, default binds to NUMA domains"
n=$((ncores + 2))
launch -n "$n" -v sh -c "$show_cpus"
expect_rc 0
expect_err "^symcoll_run: binding each rank to a NUMA domain's cores \\($n rank\\(s\\), $ncores core\\(s\\), [0-9]+ domain\\(s\\)\\): ranks outnumber cores\$"
grep -q 'warning' "$tmp/err" && fail "a warning for the default binding"
union=$(for r in $(seq 0 $((n - 1))); do
    [ "$(rank_cpus "$r")" = "$(verbose_cpus "$r")" ] || fail "rank $r: cpus differ from -v"
    grep -q "^symcoll_run: rank $r pid [0-9]*: numa [0-9?]*, cpus " "$tmp/err" ||
        fail "-v does not give rank $r a NUMA domain"
    rank_cpus "$r" | tr ' ' '\n'
done | sort -nu | tr '\n' ' ' | sed 's/^ *//')
[ "$union" = "$allowed" ] || fail "the ranks together run on '$union', expected '$allowed'"

case="binding: --bind-to core with more ranks than cores wraps around"
launch -n "$n" --bind-to core sh -c "$show_cpus"
expect_rc 0
expect_err "^symcoll_run: warning: $n ranks on $ncores core\\(s\\): --bind-to core puts rank r on core r mod $ncores"
[ "$(rank_cpus "$ncores")" = "$(rank_cpus 0)" ] || fail "rank $ncores is not on rank 0's core"
[ "$(rank_cpus 0 | wc -w)" -lt "$(echo $allowed | wc -w)" ] || [ "$ncores" -eq 1 ] ||
    fail "rank 0 is not bound to one core: $(rank_cpus 0)"

case="binding: --bind-to numa"
launch -n 2 --bind-to numa -v sh -c "$show_cpus"
expect_rc 0
grep -q "^symcoll_run: rank 1 pid [0-9]*: numa [0-9?]*, cpus " "$tmp/err" ||
    fail "-v does not give rank 1 a NUMA domain"

case="binding: --bind-to none"
launch -n 2 --bind-to none -v sh -c "$show_cpus"
expect_rc 0
for r in 0 1; do
    [ "$(rank_cpus "$r")" = "$allowed" ] || fail "rank $r runs on '$(rank_cpus "$r")'"
    grep -q "^symcoll_run: rank $r pid [0-9]*: not bound, cpus " "$tmp/err" ||
        fail "-v does not say rank $r is not bound"
done

if command -v taskset >/dev/null 2>&1; then
    case="binding stays inside the launcher's CPUs"
    one=${allowed%% *}
    ncases=$((ncases + 1))
    $guard taskset -c "$one" "$run" -n 3 sh -c "$show_cpus" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 0
    for r in 0 1 2; do
        [ "$(rank_cpus "$r")" = "$one " ] || fail "rank $r runs on '$(rank_cpus "$r")'"
    done
fi

case="usage: --bind-to bad"
launch -n 1 --bind-to socket true
expect_rc 2
expect_err "invalid --bind-to 'socket'"

# --- --tag-output: every line tagged with rank and stream, a last line without a newline
#     completed, nothing lost, also from a rank that is killed
case="--tag-output"
launch -n 2 --tag-output sh -c 'echo "out $SYMCOLL_RANK"; echo "err $SYMCOLL_RANK" >&2
    printf "last $SYMCOLL_RANK"'
expect_rc 0
[ "$(sort "$tmp/out" | tr '\n' '|')" = "[1,0]<stdout>:last 0|[1,0]<stdout>:out 0|[1,1]<stdout>:last 1|[1,1]<stdout>:out 1|" ] ||
    fail "stdout: $(tr '\n' '|' <"$tmp/out")"
[ "$(sort "$tmp/err" | tr '\n' '|')" = "[1,0]<stderr>:err 0|[1,1]<stderr>:err 1|" ] ||
    fail "stderr: $(tr '\n' '|' <"$tmp/err")"

case="--tag-output, many lines"
launch -n 2 --tag-output sh -c 'seq 1 20000'
expect_rc 0
for r in 0 1; do
    sed -n "s/^\\[1,$r\\]<stdout>://p" "$tmp/out" >"$tmp/lines"
    seq 1 20000 | cmp -s - "$tmp/lines" || fail "rank $r: lines lost or changed"
done
[ "$(wc -l <"$tmp/out")" -eq 40000 ] || fail "$(wc -l <"$tmp/out") lines, expected 40000"

case="--tag-output, a rank killed"
# rank 1 dies only once rank 0 has written (a mark file says so): otherwise the launcher
# may stop rank 0 before it ever ran, and there is nothing to lose
rm -f "$tmp/mark"
launch -n 2 --tag-output env MARK="$tmp/mark" sh -c 'echo "before $SYMCOLL_RANK"
    printf "cut $SYMCOLL_RANK"
    if [ "$SYMCOLL_RANK" = 1 ]; then
        i=0; while [ ! -e "$MARK" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
        kill -KILL $$
    fi
    touch "$MARK"; exec sleep 300'
expect_rc 137
for r in 0 1; do
    grep -q "^\\[1,$r\\]<stdout>:before $r\$" "$tmp/out" || fail "rank $r: first line lost"
    grep -q "^\\[1,$r\\]<stdout>:cut $r\$" "$tmp/out" || fail "rank $r: last line lost"
done

# --- stdin goes to rank 0 only; it is read by rank 0 itself, so what rank 0 does not
#     read is left to whoever reads it next
case="stdin to rank 0"
printf 'a\nb\n' >"$tmp/in"
launch -n 3 sh -c 'echo "$SYMCOLL_RANK:$(tr "\n" " ")"' <"$tmp/in"
expect_rc 0
[ "$(sort "$tmp/out" | tr '\n' '|')" = "0:a b |1:|2:|" ] || fail "read: $(tr '\n' '|' <"$tmp/out")"
case="stdin not read"
left=$(printf 'kept\n' | { $guard "$run" -n 2 true >"$tmp/out" 2>"$tmp/err"; cat; })
ncases=$((ncases + 1))
[ "$left" = kept ] || fail "the launcher consumed input rank 0 did not read: '$left'"

# a terminal is read by the launcher and passed on (the ranks' process group may not
# read it); script(1) gives the launcher one
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
    case="stdin from a terminal"
    ncases=$((ncases + 1))
    rm -f "$tmp/tty.ready" "$tmp/tty.0" "$tmp/tty.1"
    {
        n=0
        while [ ! -e "$tmp/tty.ready" ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
        printf 'typed\n'
        n=0
        while [ ! -s "$tmp/tty.0" ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
    } | $guard script -qec "$run -n 2 sh -c 'touch $tmp/tty.ready; read -r x; echo \"[\$x]\" >$tmp/tty.\$SYMCOLL_RANK'" /dev/null >"$tmp/out" 2>"$tmp/err"
    [ "$(cat "$tmp/tty.0" 2>/dev/null)" = "[typed]" ] ||
        fail "rank 0 read '$(cat "$tmp/tty.0" 2>/dev/null)' from the terminal"
    [ "$(cat "$tmp/tty.1" 2>/dev/null)" = "[]" ] ||
        fail "rank 1 read '$(cat "$tmp/tty.1" 2>/dev/null)', expected nothing"
fi

# --- --timeout
case="--timeout"
launch -n 2 --timeout 1 --grace 1 sleep 300
expect_rc 124
expect_err '^symcoll_run: timeout after 1 s; stopping 2 rank\(s\) still running: 0, 1$'

# --- PROGRAM cannot be executed
case="missing program"
launch -n 2 "$tmp/no-such-program"
expect_rc 127
expect_err "^symcoll_run: cannot execute '.*no-such-program' \\(rank 0\\): No such file"

# --- PROGRAM's arguments are passed as they are, options included
case="arguments"
launch -n 1 sh -c 'test "$1" = "a b" && test "$2" = "-n" && test "$#" = 2' x "a b" -n
expect_rc 0

# --- SIGTERM to the launcher is forwarded to the ranks
case="SIGTERM forwarded"
ncases=$((ncases + 1))
$guard "$run" -n 2 sh -c '
    trap "echo term >\"'"$tmp"'/term.\$SYMCOLL_RANK\"; exit 0" TERM
    echo ready >"'"$tmp"'/ready.$SYMCOLL_RANK"
    while :; do sleep 0.2; done' >"$tmp/out" 2>"$tmp/err" &
pid=$!
n=0
while [ ! -s "$tmp/ready.0" ] || [ ! -s "$tmp/ready.1" ]; do
    n=$((n + 1))
    if [ $n -gt 1200 ]; then
        break
    fi
    sleep 0.1
done
kill -TERM $pid
wait $pid
rc=$?
expect_rc 143
expect_err '^symcoll_run: got signal 15'
[ -s "$tmp/term.0" ] && [ -s "$tmp/term.1" ] || fail "the ranks did not get SIGTERM"

# --- usage errors
case="usage: no -n"
launch true
expect_rc 2
expect_err 'number of ranks'
case="usage: more nodes than ranks"
launch -n 2 --sim-nodes 3 true
expect_rc 2
case="usage: no program"
launch -n 2
expect_rc 2
case="usage: -h"
launch -h
expect_rc 0
grep -q '^Usage: symcoll_run -n N' "$tmp/out" || fail "no usage text on stdout"
for opt in --sim-nodes --bind-to --tag-output --timeout --grace -N -t; do
    grep -q -- "^ *$opt " "$tmp/out" || fail "the help does not document $opt"
done

if [ $failures -ne 0 ]; then
    echo "$failures failure(s) in $ncases launches"
    exit 1
fi
echo "PASS: $ncases launches behaved as expected"
exit 0
