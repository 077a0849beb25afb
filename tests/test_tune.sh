#!/bin/sh
# symcoll_tune and SYMCOLL_TUNE_FILE end to end: a quick tune on 3 ranks (1 node) writes
# a file, one on 4 ranks on 2 simulated nodes adds its layout; programs that load it
# show the tuned rows (symcoll_info -a) and compute right (symcoll_perf's #wrong); a
# rank with another file fails creation on every rank, naming it (or, with
# SYMCOLL_TUNE_MISMATCH=ignore, every rank ignores it); a layout the file lacks falls
# back with a log line; a damaged file (truncated, another version, garbage, edited) is
# refused with a message that says what is wrong, and symcoll_tune leaves such a file
# as it is.
. "${top_srcdir:-.}/tests/testlib.sh"
make_tmp tune-test
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n
srun="$top_builddir/tools/symcoll_run"
tune="$top_builddir/tools/symcoll_tune"
info="$top_builddir/tools/symcoll_info"
perf="$top_builddir/tools/symcoll_perf"
status=0

for p in "$srun" "$tune" "$info" "$perf"; do
    if [ ! -x "$p" ]; then
        echo "FAIL: $p not built"
        exit 99
    fi
done

# run NAME EXPECTED-STATUS ARGS...: output in $tmp/out and $tmp/err
run() {
    name=$1 want=$2
    shift 2
    timeout -s KILL 200 "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne "$want" ]; then
        echo "FAIL: $name: exit status $rc, expected $want; stdout, stderr:"
        sed 's/^/    /' "$tmp/out" | tail -20
        sed 's/^/    /' "$tmp/err" | tail -20
        status=1
        return 1
    fi
}

# expect NAME FILE REGEX
expect() {
    grep -E -q -- "$3" "$2" && return 0
    echo "FAIL: $1: no line matches /$3/ in:"
    sed 's/^/    /' "$2" | head -30
    status=1
    return 1
}

f="$tmp/tune.txt"
run "tune, 3 ranks" 0 "$srun" -n 3 --timeout 150 "$tune" --quick -o "$f" &&
    expect "tune, 3 ranks: table" "$tmp/out" '^  all-reduce +host +8 +(oneshot|twoshot) ' &&
    expect "tune, 3 ranks: file" "$f" '^layout nodes=1 ppn=3 gpu=none net=none order=auto lib=' &&
    expect "tune, 3 ranks: entry" "$f" '^allreduce host 0 [0-9]+ (oneshot|twoshot) '
run "tune, 2 x 2" 0 "$srun" -n 4 --sim-nodes 2 --timeout 150 "$tune" --quick -o "$f" \
    --csv "$tmp/tune.csv" --plot "$tmp/tune.png" &&
    expect "tune, 2 x 2: table's spread" "$tmp/out" '^# collective .* margin +spread ' &&
    expect "tune, 2 x 2: CSV" "$tmp/tune.csv" '^allreduce,host,8,(rd|hier),[0-9.]+,[0-9.]+,[0-9.]+,[01]$' &&
    expect "tune, 2 x 2: file" "$f" '^layout nodes=2 ppn=2 gpu=none net=[^ ]+ order=auto lib=' &&
    expect "tune, 2 x 2: first layout kept" "$f" '^layout nodes=1 ppn=3 ' &&
    expect "tune, 2 x 2: entry" "$f" '^allreduce host [0-9]+ ([0-9]+|max) (rd|rhd|hier) ' &&
    expect "tune, 2 x 2: up to the largest size measured" "$f" '^allreduce host [0-9]+ 1048576 '
# the plot: drawn where a python3 has matplotlib, else said (and the run still succeeds)
if python3 -c 'import matplotlib' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    if ! head -c 8 "$tmp/tune.png" 2>/dev/null | grep -q PNG; then
        echo "FAIL: tune, 2 x 2: no PNG plot although matplotlib is there"
        sed 's/^/    /' "$tmp/err" | tail -10
        status=1
    fi
else
    expect "tune, 2 x 2: no plot, said" "$tmp/err" 'no plot: .*matplotlib'
fi
[ "$(grep -c '^layout ' "$f")" -eq 2 ] || {
    echo "FAIL: $f holds $(grep -c '^layout ' "$f") layouts, expected 2"
    status=1
}
cp "$f" "$tmp/good.txt"

# a tune of host memory keeps the layout's entries of CUDA memory (written by a tune on
# GPUs): the file with one such entry added (and its checksum redone), tuned again
python3 - "$f" "$tmp/with-cuda.txt" <<'PY'
import sys
text = open(sys.argv[1]).read()
body = text[:text.index("\nchecksum ") + 1]
at = body.index("\n", body.index("layout nodes=2 ppn=2 ")) + 1
body = body[:at] + "allreduce cuda 0 max rhd 50.00 60.00 rd\n" + body[at:]
h = 1469598103934665603
for b in body.encode():
    h = ((h ^ b) * 1099511628211) % (1 << 64)
open(sys.argv[2], "w").write(body + "checksum %016x\n" % h)
PY
run "tune, 2 x 2, host, CUDA entries kept" 0 "$srun" -n 4 --sim-nodes 2 --timeout 150 "$tune" \
    --quick -b 8 -e 64 -o "$tmp/with-cuda.txt" &&
    expect "tune, 2 x 2: CUDA entry kept" "$tmp/with-cuda.txt" '^allreduce cuda 0 max rhd 50.00 60.00 rd$' &&
    expect "tune, 2 x 2: host entries anew" "$tmp/with-cuda.txt" '^allreduce host [0-9]+ 64 ' &&
    run "tune, 2 x 2, host, CUDA entries kept: loads" 0 "$srun" -n 4 --sim-nodes 2 --timeout 60 \
        env SYMCOLL_TUNE_FILE="$tmp/with-cuda.txt" "$info" -a
# measuring CUDA memory needs a device: said, and nothing written
if ! nvidia-smi -L >/dev/null 2>&1; then
    run "tune --mem cuda without a GPU" 1 "$srun" -n 2 --timeout 60 "$tune" --quick --mem cuda \
        -o "$tmp/cuda.txt" &&
        expect "tune --mem cuda without a GPU: said" "$tmp/err" '--mem cuda: (no CUDA device|this build has no CUDA)'
    [ ! -e "$tmp/cuda.txt" ] || {
        echo "FAIL: tune --mem cuda without a GPU wrote a file"
        status=1
    }
fi

# loaded: the tuned rows, where they come from, and right results
for layout in "-n 3" "-n 4 --sim-nodes 2"; do
    # shellcheck disable=SC2086
    run "info, $layout" 0 env SYMCOLL_TUNE_FILE="$f" "$srun" $layout --timeout 100 "$info" -a &&
        expect "info, $layout: tuned" "$tmp/out" '^  host +8 +8B +[a-z]+ +[a-z-]+ +canonical +tuned +forced by the tuning file' &&
        expect "info, $layout: file named" "$tmp/out" "^# from: .*tuning file: $f \\(its layout of this communicator serves\\)"
    # shellcheck disable=SC2086
    run "perf, $layout" 0 env SYMCOLL_TUNE_FILE="$f" "$srun" $layout --timeout 100 "$perf" -b 8 -e 1M -f 16 -n 3 -w 1 &&
        expect "perf, $layout: right" "$tmp/out" '^# [0-9]+ rows, .* wrong elements 0$'
done

# a rank with another file (or none) fails creation on every rank, naming the rank
other="$tmp/other.txt"
run "tune, another" 0 "$srun" -n 3 --timeout 150 "$tune" --quick -e 512 -o "$other"
pick='if [ "$SYMCOLL_RANK" = 1 ]; then SYMCOLL_TUNE_FILE=$OTHER; fi; export SYMCOLL_TUNE_FILE; exec "$0" "$@"'
run "other file" 1 env SYMCOLL_TUNE_FILE="$f" OTHER="$other" "$srun" -n 3 --timeout 100 \
    sh -c "$pick" "$info" -a &&
    expect "other file: named" "$tmp/err" "differ from it: 1 \\(other contents\\)"
run "no file on a rank" 1 env SYMCOLL_TUNE_FILE="$f" OTHER= "$srun" -n 3 --timeout 100 \
    sh -c "$pick" "$info" -a &&
    expect "no file: named" "$tmp/err" "differ from it: 1 \\(no file\\)"
run "no file on a rank, ignored" 0 env SYMCOLL_TUNE_FILE="$f" OTHER= SYMCOLL_TUNE_MISMATCH=ignore \
    "$srun" -n 3 --timeout 100 sh -c "$pick" "$info" -a &&
    expect "no file, ignored: warned" "$tmp/err" "every rank ignores its file"
run "other file, ignored" 0 env SYMCOLL_TUNE_FILE="$f" OTHER="$other" SYMCOLL_TUNE_MISMATCH=ignore \
    "$srun" -n 3 --timeout 100 sh -c "$pick" "$info" -a &&
    expect "ignored: warned" "$tmp/err" "every rank ignores its file" &&
    expect "ignored: built-in" "$tmp/out" '^  host +8 +8B .* built-in '

# a layout the file lacks: the built-in rules, with a log line
run "stale layout" 0 env SYMCOLL_TUNE_FILE="$f" "$srun" -n 2 --timeout 100 "$perf" -b 8 -e 64 -n 2 -w 1 &&
    expect "stale layout: warned" "$tmp/err" "has no layout \"nodes=1 ppn=2 "
run "stale layout, info" 0 env SYMCOLL_TUNE_FILE="$f" "$srun" -n 2 --timeout 100 "$info" -a &&
    expect "stale layout: built-in rows" "$tmp/out" '^  host +8 +8B .* built-in ' &&
    expect "stale layout: said" "$tmp/out" 'no layout of this communicator: unused'

# damaged files: refused at creation with what is wrong; symcoll_tune leaves them alone
head -c 200 "$f" >"$tmp/truncated.txt"
sed 's/^symcoll-tune 1$/symcoll-tune 7/' "$f" >"$tmp/version.txt"
head -c 3000 /dev/urandom >"$tmp/garbage.txt"
sed '0,/^allreduce host 0 /s/^allreduce host 0 /allreduce host 1 /' "$f" >"$tmp/edited.txt"
for bad in truncated:truncated "version:format version 7" "garbage:not a" "edited:checksum does not match"; do
    bname=${bad%%:*} bwhy=${bad#*:}
    run "damaged $bname" 1 env SYMCOLL_TUNE_FILE="$tmp/$bname.txt" "$srun" -n 3 --timeout 100 "$info" -a &&
        expect "damaged $bname: why" "$tmp/err" "tuning file $tmp/$bname.txt.*$bwhy" &&
        expect "damaged $bname: creation failed" "$tmp/err" "cannot create a communicator: invalid parameter"
    cp "$tmp/$bname.txt" "$tmp/before"
    run "tune over damaged $bname" 1 "$srun" -n 3 --timeout 100 "$tune" --quick -e 64 -o "$tmp/$bname.txt" &&
        expect "tune over damaged $bname: said" "$tmp/err" "not a whole tuning file" &&
        cmp -s "$tmp/before" "$tmp/$bname.txt" || {
        echo "FAIL: symcoll_tune changed the damaged file $bname"
        status=1
    }
    # refused before anything is measured
    if grep -q '^  all-reduce ' "$tmp/out"; then
        echo "FAIL: symcoll_tune measured before refusing the damaged file $bname"
        status=1
    fi
done
cmp -s "$f" "$tmp/good.txt" || {
    echo "FAIL: the good file changed"
    status=1
}
exit $status
