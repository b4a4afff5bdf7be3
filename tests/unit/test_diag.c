/* Unit tests for diag.c's hiding of values from the environment: the loading thread's rule
 * (every value, anywhere) and the process-wide one of the configuration in service (4 bytes
 * or more, at word boundaries, shown values left out). */
#include "log/diag.h"
#include "test.h"

static char out[256];

static const char *line(const char *msg)
{
    diag_scrub_line(msg, strlen(msg), out, sizeof(out));
    return out;
}

int main(void)
{
    struct diag_secret s[] = {
        { "${ROOT}", 7, "/srv/s3cret", 11, false },
        { "${N}", 4, "2", 1, false },
        { "${WORD}", 7, "listen", 6, false },
        { "${PORT}", 7, "8080", 4, true },
        { "${OTHER}", 8, "8080", 4, false }, /* the same value, shown under another name */
    };
    unsigned n = sizeof(s) / sizeof(s[0]);

    ok(!diag_scrubbing(), "nothing hidden before a configuration is in service");
    is_str(line("root /srv/s3cret"), "root /srv/s3cret", "nothing published: as it is");

    diag_publish(s, n);
    ok(diag_scrubbing(), "published values make every line scrubbed");
    is_str(line("root_follow: /srv/s3cret now names another directory"),
           "root_follow: ${ROOT} now names another directory", "a whole value");
    is_str(line("/srv/s3cret/_redirects:2: bad"), "${ROOT}/_redirects:2: bad",
           "a value before a slash: a boundary");
    is_str(line("with 2 threads"), "with 2 threads", "a value under 4 bytes is left alone");
    is_str(line("listening on"), "listening on", "inside a longer word: left alone");
    is_str(line("(listen)"), "(${WORD})", "between punctuation: replaced");
    is_str(line("/srv/s3cret2"), "/srv/s3cret2", "a longer name that starts with it: left alone");
    is_str(line("listening on http://127.0.0.1:8080"), "listening on http://127.0.0.1:8080",
           "a shown value stays, whatever other name has it too");

    /* The loading thread's rule: every value, anywhere. */
    diag_secrets(s, n);
    is_str(line("with 2 threads"), "with ${N} threads", "loading: a short value is hidden");
    is_str(line("listening"), "${WORD}ing", "loading: inside a word too");
    diag_secrets(NULL, 0);

    /* A reload replaces the values; the array published may go. */
    struct diag_secret t[] = { { "${KEY}", 6, "abcd1234", 8, false } };
    diag_publish(t, 1);
    is_str(line("/srv/s3cret abcd1234"), "/srv/s3cret ${KEY}", "the new values only");
    diag_publish(NULL, 0);
    ok(!diag_scrubbing(), "none at exit");
    is_str(line("abcd1234"), "abcd1234", "and nothing is replaced");
    return done_testing();
}
