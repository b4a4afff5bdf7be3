/* directives.h — every configuration directive, in one table (directives.c).
 *
 * A directive has a name, the places it may appear (the top level of the file, a `server`
 * block, a `location` block), how many values it takes, and one function that checks and
 * applies them. Process-wide directives may appear at the top level only (the command line's
 * flags apply them too); site directives anywhere, applied to that place's settings
 * (struct loc_conf: the top level's own, a server's, a location's). Errors are printed as
 * "WHERE: reason" (WHERE is "FILE:LINE", or "lfhttpd: --flag"). */
#ifndef LF_DIRECTIVES_H
#define LF_DIRECTIVES_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct loc_conf;

/* Where a directive may appear. */
enum { IN_TOP = 1, IN_SERVER = 2, IN_LOCATION = 4, IN_ANY = IN_TOP | IN_SERVER | IN_LOCATION };

/* What a directive is applied to. */
struct dir_ctx {
    struct config *cfg;
    struct loc_conf *lc;    /* the settings of the block it is in (the top level's outside) */
    const char *where;      /* prefix of error messages */
    unsigned line;          /* line of the configuration file; 0 for the command line */
};

struct directive;
typedef int (*directive_fn)(const struct directive *d, const struct dir_ctx *x, char **args,
                            int nargs);

struct directive {
    const char *name;
    uint8_t in;             /* IN_* */
    uint8_t nmin, nmax;     /* how many values (nmax 0: any number) */
    const char *takes;      /* what it takes, for the message when the count is wrong */
    directive_fn apply;
    size_t offset;          /* its field, in struct config (IN_TOP) or struct loc_conf */
    uint8_t field;          /* the field's C type, for numbers (directives.c) */
    uint8_t unit;           /* numbers: plain, size (k/m/g) or duration (ms/s/m/h) */
    uint64_t min, max;      /* numbers */
};

/* The directive called `name`, or NULL. */
const struct directive *directive_find(const char *name);
/* Check the number of values and apply them. Returns 0, or -1 (message printed). */
int directive_apply(const struct directive *d, const struct dir_ctx *x, char **args, int nargs);
/* The whole table (for tests and documentation checks). */
extern const struct directive directive_table[];
extern const size_t directive_count;

#endif
