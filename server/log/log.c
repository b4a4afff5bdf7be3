/* log.c — error log; see log.h. */
#include "log/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log/logfile.h"

/* Written once at start-up before any thread exists; read-only afterwards. */
static enum log_level log_threshold = LOG_NOTICE;
static int log_fd = 2;
static char log_path[PATH_MAX]; /* "" for stderr */
/* Whole lines or nothing, and lost lines counted when the file cannot take them (logfile.h). */
static struct logfile errlog = { .fd = 2, .plain = true, .lock = PTHREAD_MUTEX_INITIALIZER };

static const char *const level_names[] = { "error", "warn", "notice", "info", "debug" };

void log_init(enum log_level level, int fd)
{
    log_threshold = level;
    log_fd = fd;
    errlog.fd = fd;
    logfile_reopened(&errlog);
}

int log_open(const char *target)
{
    if (!strcmp(target, "stderr")) {
        log_path[0] = '\0';
        log_fd = 2;
        return 0;
    }
    int fd = open(target, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "lfhttpd: error log %s: %s\n", target, strerror(errno));
        return -1;
    }
    snprintf(log_path, sizeof(log_path), "%s", target);
    /* Whatever is printed on stderr from now on (a configuration error found by a reload, say)
     * lands in the error log too. */
    dup2(fd, 2);
    close(fd);
    log_fd = 2;
    errlog.fd = 2;
    logfile_reopened(&errlog);
    return 0;
}

int log_reopen(void)
{
    if (!log_path[0])
        return 0;
    int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = dup2(fd, log_fd) < 0 ? -errno : 0;
    close(fd);
    if (rc == 0)
        logfile_reopened(&errlog);
    return rc;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > log_threshold)
        return;
    char line[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02dZ [%s] ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    int err = 0;
    uint64_t lost = 0;
    if (logfile_write(&errlog, line, len, &err, &lost) == LOGFILE_RECOVERED) {
        /* The error log itself failed: the one place to say so is the log, once it works. */
        n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02dZ [%s] error log: %llu "
                     "line(s) lost before this one: %s\n", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, level_names[LOG_ERROR],
                     (unsigned long long)lost, strerror(err));
        if (n > 0)
            logfile_write(&errlog, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1,
                          NULL, NULL);
    }
}
