/* Logger: SYMCOLL_LOG_LEVEL=error|warn|info|debug to stderr, each line prefixed with
 * the rank. The only way library code prints. */
#ifndef SYMCOLL_CORE_LOG_H
#define SYMCOLL_CORE_LOG_H

typedef enum {
    LOG_LEVEL_NONE = 0,
    LOG_LEVEL_ERROR,
    LOG_LEVEL_WARN,
    LOG_LEVEL_INFO,
    LOG_LEVEL_DEBUG
} log_level_t;

extern int log_level_current;

void log_set_level(log_level_t level);
/* rank shown in the prefix; -1 before it is known */
void log_set_rank(int rank);
void log_emit(log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define SC_LOG(_lvl, ...)                                                                      \
    do {                                                                                       \
        if ((int)(_lvl) <= log_level_current)                                                  \
            log_emit((_lvl), __FILE__, __LINE__, __VA_ARGS__);                                 \
    } while (0)

#define log_error(...) SC_LOG(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) SC_LOG(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) SC_LOG(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) SC_LOG(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
