/* diag.h — messages about the configuration: its errors, wherever they are found (the loader,
 * the directives, a handler type's checks, the runtime built from it, the listeners it opens).
 *
 * Two things set them apart from the error log's lines. They may quote a value that came from
 * the environment (`${NAME}`, envsubst.h), which may be a secret: while a configuration is
 * being worked on, the thread knows the values it took from the environment and every message
 * shows the reference as written (`${NAME}`) in their place (the calling thread's: a
 * configuration is read by one thread at a time). And they are printed on stderr until the
 * error log is open (log_open), through it afterwards: a reload's messages are error log lines
 * with their level and time like the others (JSON when the error log is).
 *
 * Once a configuration is in service, its values from the environment are also published
 * process-wide (diag_publish): every error log line, from any thread (the tick's root_follow
 * notice, ACME's, a compression cache's), shows the reference in their place. That rule is
 * narrower than the loading thread's, to keep runtime lines readable: values of 4 bytes or
 * more, matched only where the bytes around them are not letters or digits. The access log is
 * never scrubbed: it prints request data, not configuration. */
#ifndef LF_DIAG_H
#define LF_DIAG_H

#include <stdbool.h>
#include <stddef.h>

/* A value from the environment (value[0..vlen)) and how the configuration wrote it. shown: the
 * server prints it on purpose once in service (a listener's address, the thread count, the
 * concurrency model, a server name): hidden from the messages about the configuration, not
 * from the runtime lines (diag_publish leaves it out). */
struct diag_secret {
    const char *written;
    size_t wlen;
    const char *value;
    size_t vlen;
    bool shown;
};

/* Print one message (printf-style, ending with its newline), with every known secret replaced
 * by its reference, on stderr or in the error log. */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The values to hide from now on, on this thread (NULL, 0: none). The array is the caller's
 * and must outlive its use. */
void diag_secrets(const struct diag_secret *s, unsigned n);
/* `s` is being freed: forget it if it is this thread's. */
void diag_forget(const struct diag_secret *s);
/* Replace the secrets in msg[0..len) into out[cap] (NUL-terminated, truncated if need be).
 * Returns the length written. */
size_t diag_scrub(const char *msg, size_t len, char *out, size_t cap);

/* The configuration going into service (at start and at each reload): its values (not the
 * shown ones) replace those published before, copied (the array may go). NULL, 0: none (at
 * exit, frees them). */
void diag_publish(const struct diag_secret *s, unsigned n);
/* Does an error log line need diag_scrub_line (this thread hides, or values are published)? */
bool diag_scrubbing(void);
/* An error log line's message: this thread's rule while it reads a configuration (every
 * value), the process-wide one otherwise (see above). Same contract as diag_scrub. */
size_t diag_scrub_line(const char *msg, size_t len, char *out, size_t cap);

#endif
