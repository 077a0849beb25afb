/* The ground of every wait loop: a polite spin. */
#include "core/core.h"

#include <sched.h>

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
