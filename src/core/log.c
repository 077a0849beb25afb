/* Logger implementation: one line per call, written with a single write(2) so lines
 * of different ranks do not interleave. */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int log_level_current = LOG_LEVEL_WARN;
static int log_rank = -1;

static const char *const log_level_names[] = {"NONE", "ERROR", "WARN", "INFO", "DEBUG"};

void log_set_level(log_level_t level)
{
    log_level_current = (int)level;
}

void log_set_rank(int rank)
{
    log_rank = rank;
}

void log_emit(log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char buf[1024];
    const char *base = strrchr(file, '/');
    int n;
    va_list ap;

    base = base ? base + 1 : file;
    if (log_rank >= 0)
        n = snprintf(buf, sizeof(buf), "[symcoll rank %d pid %d] %s %s:%d ", log_rank,
                     (int)getpid(), log_level_names[level], base, line);
    else
        n = snprintf(buf, sizeof(buf), "[symcoll rank ? pid %d] %s %s:%d ", (int)getpid(),
                     log_level_names[level], base, line);
    if (n < 0 || n >= (int)sizeof(buf))
        n = 0;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    n += m;
    if (n > (int)sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t r = write(STDERR_FILENO, buf, (size_t)n);
    (void)r;
}
