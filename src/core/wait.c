/* The ground of every wait loop: a polite spin, and sleeping on a word that another
 * process moves (futex). */
#include "core/wait.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void core_spin_pause(unsigned *iter)
{
    if (++*iter < 256) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    } else {
        sched_yield();
    }
}

/* The half of a 64-bit word that changes at every step: a futex is 32 bits. */
static uint32_t *core_word_futex(_Atomic uint64_t *w)
{
    return (uint32_t *)(void *)w + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
}

void core_word_sleep(_Atomic uint64_t *word, _Atomic uint64_t *waiters, uint64_t seen, long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};

    atomic_fetch_add_explicit(waiters, 1, memory_order_seq_cst);
    if (atomic_load_explicit(word, memory_order_seq_cst) == seen)
        syscall(SYS_futex, core_word_futex(word), FUTEX_WAIT, (uint32_t)seen, &ts, NULL, 0);
    atomic_fetch_sub_explicit(waiters, 1, memory_order_relaxed);
}

void core_word_publish(_Atomic uint64_t *word, _Atomic uint64_t *waiters, uint64_t v)
{
    atomic_store_explicit(word, v, memory_order_seq_cst);
    if (atomic_load_explicit(waiters, memory_order_seq_cst))
        syscall(SYS_futex, core_word_futex(word), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
