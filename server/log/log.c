/* log.c — error log; see log.h. */
#include "log/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "log/diag.h"
#include "log/logfile.h"

/* Written once at start-up before any thread exists; read-only afterwards. */
static enum log_level log_threshold = LOG_NOTICE;
static int log_fd = 2;
static char log_path[PATH_MAX]; /* "" for stderr */
static atomic_bool log_opened;
static bool log_json; /* error_log_format json */
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

/* While the server starts, with the error log in a file: the stderr it was started with (a
 * terminal, a unit's journal), where the errors that stop the start are repeated, plain, so
 * that whoever started it sees why (nginx does the same). -1 otherwise. */
static _Atomic int startup_fd = -1;
static atomic_bool started; /* log_started() was called: a later log_open never echoes */
static pthread_mutex_t startup_lock = PTHREAD_MUTEX_INITIALIZER;

void log_started(void)
{
    atomic_store(&started, true);
    pthread_mutex_lock(&startup_lock);
    int fd = atomic_exchange(&startup_fd, -1);
    if (fd >= 0)
        close(fd);
    pthread_mutex_unlock(&startup_lock);
}

static void startup_echo(enum log_level level, const char *msg, size_t len)
{
    if (level > LOG_ERROR || atomic_load_explicit(&startup_fd, memory_order_relaxed) < 0)
        return;
    pthread_mutex_lock(&startup_lock);
    int fd = atomic_load(&startup_fd);
    if (fd >= 0) {
        static const char tag[] = "lfhttpd: ";
        char out[4096];
        size_t n = 0;
        if (len < sizeof(tag) - 1 || memcmp(msg, tag, sizeof(tag) - 1)) {
            memcpy(out, tag, sizeof(tag) - 1);
            n = sizeof(tag) - 1;
        }
        size_t take = len < sizeof(out) - n - 1 ? len : sizeof(out) - n - 1;
        memcpy(out + n, msg, take);
        n += take;
        out[n++] = '\n';
        ssize_t w = write(fd, out, n);
        (void)w; /* a terminal gone: the log has the line */
    }
    pthread_mutex_unlock(&startup_lock);
}

bool log_is_open(void)
{
    return atomic_load_explicit(&log_opened, memory_order_relaxed);
}

int log_open(const char *target)
{
    if (!strcmp(target, "stderr")) {
        log_path[0] = '\0';
        log_fd = 2;
        atomic_store(&log_opened, true);
        return 0;
    }
    int fd = open(target, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "lfhttpd: error log %s: %s\n", target, strerror(errno));
        return -1;
    }
    snprintf(log_path, sizeof(log_path), "%s", target);
    if (!atomic_load(&started) && atomic_load(&startup_fd) < 0)
        atomic_store(&startup_fd, fcntl(2, F_DUPFD_CLOEXEC, 3));
    /* Whatever is printed on stderr from now on (a configuration error found by a reload, say)
     * lands in the error log too. */
    dup2(fd, 2);
    close(fd);
    log_fd = 2;
    errlog.fd = 2;
    logfile_reopened(&errlog);
    atomic_store(&log_opened, true);
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

void log_set_json(bool json)
{
    log_json = json;
}

#define LOG_LINE_MAX 1024

/* One line of the log, in its format, into line[LOG_LINE_MAX] (newline included): its length.
 * The message is taken as it is (plain) or escaped (JSON) and cut to fit. */
static size_t log_line(char *line, const struct tm *tm, enum log_level level, const char *msg,
                       size_t mlen)
{
    char when[64]; /* 2026-11-23T19:18:43Z, as the JSON access log writes it */
    snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm->tm_year + 1900,
             tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min, tm->tm_sec);
    size_t n;
    if (!log_json) {
        n = (size_t)snprintf(line, LOG_LINE_MAX, "%s [%s] ", when, level_names[level]);
        if (mlen > LOG_LINE_MAX - 1 - n)
            mlen = LOG_LINE_MAX - 1 - n;
        memcpy(line + n, msg, mlen);
        n += mlen;
    } else {
        static const char tail[] = "\"}";
        n = (size_t)snprintf(line, LOG_LINE_MAX, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"",
                             when, level_names[level]);
        json_escape(line, LOG_LINE_MAX - sizeof(tail), &n, msg, mlen);
        memcpy(line + n, tail, sizeof(tail) - 1);
        n += sizeof(tail) - 1;
    }
    line[n++] = '\n';
    return n;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > log_threshold)
        return;
    char msg[LOG_LINE_MAX], line[LOG_LINE_MAX];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t mlen = m < 0 ? 0 : (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1;
    if (mlen && diag_scrubbing()) { /* values from the environment (diag.h) */
        mlen = diag_scrub_line(msg, mlen, line, sizeof(line));
        memcpy(msg, line, mlen);
    }
    startup_echo(level, msg, mlen);
    size_t len = log_line(line, &tm, level, msg, mlen);
    int err = 0;
    uint64_t lost = 0;
    if (logfile_write(&errlog, line, len, &err, &lost) == LOGFILE_RECOVERED) {
        /* The error log itself failed: the one place to say so is the log, once it works. */
        m = snprintf(msg, sizeof(msg), "error log: %llu line(s) lost before this one: %s",
                     (unsigned long long)lost, strerror(err));
        len = log_line(line, &tm, LOG_ERROR, msg, m < 0 ? 0 : (size_t)m);
        logfile_write(&errlog, line, len, NULL, NULL);
    }
}
