#!/bin/sh
# symcoll_run: the variables each rank gets, simulated nodes, and what happens when a
# rank fails, is killed, hangs past --timeout, or the launcher is told to stop. Ranks
# are small `sh -c` programs; every launch runs under timeout(1) so a hang is a failure.
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
case="--nodes 2"
launch -n 5 --nodes 2 sh -c \
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

case="--nodes 3 of 4 ranks"
launch -n 4 --nodes 3 sh -c 'echo "$SYMCOLL_RANK $SYMCOLL_HOST_ID"'
expect_rc 0
sort -n "$tmp/out" >"$tmp/sorted"
groups=$(awk '{ if ($2 != prev) { printf "%s", (NR > 1 ? "|" : ""); prev = $2 }
               printf "%s ", $1 }' "$tmp/sorted")
[ "$groups" = "0 1 |2 |3 " ] || fail "node blocks are '$groups', expected '0 1 |2 |3 '"

case="no --nodes leaves SYMCOLL_HOST_ID alone"
SYMCOLL_HOST_ID=mine launch -n 2 sh -c \
    'echo "$SYMCOLL_HOST_ID $SYMCOLL_RANK $SYMCOLL_LOCAL_RANK $SYMCOLL_LOCAL_SIZE"'
expect_rc 0
[ "$(sort "$tmp/out" | tr '\n' ' ')" = "mine 0 0 2 mine 1 1 2 " ] ||
    fail "SYMCOLL_HOST_ID or local ranks not as expected: $(tr '\n' ' ' <"$tmp/out")"

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
launch -n 2 --nodes 3 true
expect_rc 2
case="usage: no program"
launch -n 2
expect_rc 2
case="usage: -h"
launch -h
expect_rc 0
grep -q '^Usage: symcoll_run -n N' "$tmp/out" || fail "no usage text on stdout"

if [ $failures -ne 0 ]; then
    echo "$failures failure(s) in $ncases launches"
    exit 1
fi
echo "PASS: $ncases launches behaved as expected"
exit 0
