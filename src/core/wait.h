/* The one wait primitive of the library: wait until a 64-bit word that another process
 * moves reaches a target, spinning, then yielding, then sleeping on the word's futex,
 * with a progress hook every turn and the slow checks (deadline, abort, dead or failed
 * peer) now and then. Every barrier over shared memory is built on it. */
#ifndef SYMCOLL_CORE_WAIT_H
#define SYMCOLL_CORE_WAIT_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/core.h"

/* Sleeps on word for at most ns nanoseconds unless it moved past seen. waiters counts the
 * sleepers so that the word's owner wakes them (core_word_publish); seq_cst on both
 * sides (Dekker): either the owner sees the count, or the sleeper sees the new value. */
void core_word_sleep(_Atomic uint64_t *word, _Atomic uint64_t *waiters, uint64_t seen, long ns);

/* Stores v into word (seq_cst) and wakes its sleepers. */
void core_word_publish(_Atomic uint64_t *word, _Atomic uint64_t *waiters, uint64_t v);

/* How a wait behaves. The hooks get arg. */
typedef struct core_wait {
    unsigned spin_max; /* pause rounds before yielding: long enough that ranks with a core
                          each never sleep, short where ranks outnumber cores */
    unsigned yields;   /* sched_yield rounds before sleeping */
    long sleep_ns;     /* one bounded sleep: the checks still run between sleeps */
    /* every turn when set (UCX on TCP moves peers' data only while we progress); then
     * the checks run every turn too */
    symcoll_status_t (*progress)(void *arg);
    /* the slow checks; while spinning without progress every 32nd turn, after that every
     * turn. A status other than SYMCOLL_OK ends the wait unless the word got there. */
    symcoll_status_t (*check)(void *arg);
    void *arg;
} core_wait_t;

/* Waits until word >= target (acquire). Returns SYMCOLL_OK, or the first failed hook's
 * status (the caller logs it: it knows whom it waited for). Inline, so that the hooks of
 * a hot wait are inlined where they are constant. */
static inline symcoll_status_t core_wait_word(const core_wait_t *w, _Atomic uint64_t *word,
                                              _Atomic uint64_t *waiters, uint64_t target)
{
    unsigned spins = 0, yields = 0, pause;
    symcoll_status_t status;
    uint64_t seen;

    while ((seen = atomic_load_explicit(word, memory_order_acquire)) < target) {
        if (w->progress) {
            status = w->progress(w->arg);
            if (status != SYMCOLL_OK)
                return status;
        }
        if (spins < w->spin_max) {
            spins++;
            pause = 0;
            core_spin_pause(&pause);
            /* look at the clock only now and then while spinning */
            if (!w->progress && (spins & 31))
                continue;
        } else if (yields < w->yields) {
            yields++;
            sched_yield();
        } else {
            core_word_sleep(word, waiters, seen, w->sleep_ns);
        }
        status = w->check ? w->check(w->arg) : SYMCOLL_OK;
        /* the peer may have arrived (and even finished and exited) since our last look */
        if (status != SYMCOLL_OK && atomic_load_explicit(word, memory_order_acquire) < target)
            return status;
    }
    return SYMCOLL_OK;
}

#endif
