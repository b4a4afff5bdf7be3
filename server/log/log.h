/* log.h — the error log: leveled, printf-checked, one write() per line.
 *
 * Each line is formatted into a stack buffer and emitted with a single write(2), so lines from
 * different pool threads never interleave and no lock is taken. */
#ifndef LF_LOG_H
#define LF_LOG_H

#include <stdbool.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_NOTICE, LOG_INFO, LOG_DEBUG };

/* Set the threshold (messages above it are dropped) and the destination fd (default 2). */
void log_init(enum log_level level, int fd);
/* error_log_format json: each line one JSON object, {"time":"...","level":"...","msg":"..."},
 * with the JSON access log's time format and field naming. Start-up only. */
void log_set_json(bool json);
/* Send the error log to `target` ("stderr" or a file, opened O_APPEND). Start-up only.
 * Prints one line and returns -1 on failure. */
int log_open(const char *target);
/* Has log_open() run (diag.h's messages go to the error log from then on)? */
bool log_is_open(void);
/* The server has started: errors are no longer repeated on the stderr it was started with
 * (see log_open: while starting, with the error log in a file, they are). */
void log_started(void);
/* Reopen the error log file (SIGUSR1) by dup2()ing a fresh open onto the same descriptor, so
 * concurrent writers never see a closed descriptor. 0 or -errno. */
int log_reopen(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
