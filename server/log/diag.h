/* diag.h — messages about the configuration: its errors, wherever they are found (the loader,
 * the directives, a handler type's checks, the runtime built from it, the listeners it opens).
 *
 * Two things set them apart from the error log's lines. They may quote a value that came from
 * the environment (`${NAME}`, envsubst.h), which may be a secret: while a configuration is
 * being worked on, the thread knows the values it took from the environment and every message
 * shows the reference as written (`${NAME}`) in their place (the calling thread's: a
 * configuration is read by one thread at a time). And they are printed on stderr until the
 * error log is open (log_open), through it afterwards: a reload's messages are error log lines
 * with their level and time like the others (JSON when the error log is). */
#ifndef LF_DIAG_H
#define LF_DIAG_H

#include <stdbool.h>
#include <stddef.h>

/* A value from the environment (value[0..vlen)) and how the configuration wrote it. */
struct diag_secret {
    const char *written;
    size_t wlen;
    const char *value;
    size_t vlen;
};

/* Print one message (printf-style, ending with its newline), with every known secret replaced
 * by its reference, on stderr or in the error log. */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The values to hide from now on, on this thread (NULL, 0: none). The array is the caller's
 * and must outlive its use. */
void diag_secrets(const struct diag_secret *s, unsigned n);
/* `s` is being freed: forget it if it is this thread's. */
void diag_forget(const struct diag_secret *s);
/* Does this thread hide anything (log.c scrubs its lines then)? */
bool diag_hiding(void);
/* Replace the secrets in msg[0..len) into out[cap] (NUL-terminated, truncated if need be).
 * Returns the length written. */
size_t diag_scrub(const char *msg, size_t len, char *out, size_t cap);

#endif
