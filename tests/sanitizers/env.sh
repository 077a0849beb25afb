# Runtime options of AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer for
# the tests of a build configured with --enable-sanitizers; sourced by `make check`
# (AM_TESTS_ENVIRONMENT, tests/local.mk) with top_srcdir set. Source it by hand to run a
# test program of such a build outside make check. Options given in the environment
# already come last, so they win.

# ASan:
#   detect_leaks=1       LeakSanitizer runs when a process exits normally (exit(), return
#                        from main): every test program and each Check test's forked child.
#   abort_on_error=0     a finding ends the process with exitcode=1 (no core dump); the
#                        harness, Check and the shell tests treat any non-zero exit of a
#                        rank or child as a failure, so a finding fails the test.
#   detect_stack_use_after_return=0
#                        the default, said aloud: the fake stack slows every call and the
#                        multi-rank tests wait on deadlines.
#   symbolize=1          stack traces name functions, files and lines (see below).
#   fast_unwind_on_malloc=0
#                        record each allocation's whole stack with the DWARF unwinder: the
#                        frame-pointer unwinder stops at the first frame of a library built
#                        without frame pointers (Open MPI, UCX, libc), which leaves leak
#                        reports without the caller that matters and the Open MPI entries
#                        of lsan.supp unmatchable. Costs about a quarter more CPU time.
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=1:detect_stack_use_after_return=0:symbolize=1:fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

# LeakSanitizer: leaks in code that is not ours are listed, with the reason for each, in
# lsan.supp; print_suppressions=0 keeps the logs of passing tests short.
LSAN_OPTIONS="suppressions=${top_srcdir:-.}/tests/sanitizers/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# UBSan: every finding is fatal (the code is also built with
# -fno-sanitize-recover=undefined) and shows where it happened.
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# Check's per-test time limits (tcase_set_timeout) are sized for an uninstrumented build;
# AddressSanitizer makes the code about two to three times slower.
CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-3}

# Symbolization needs no tool: gcc's runtime reads the DWARF debug information itself
# (llvm-symbolizer, when on PATH or named by ASAN_SYMBOLIZER_PATH, is used instead).
# Frames shown as "<unknown module>" belong to a library unloaded before the report
# (Open MPI's plug-ins after MPI_Finalize), not to a missing symbolizer.
export ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS CK_TIMEOUT_MULTIPLIER
