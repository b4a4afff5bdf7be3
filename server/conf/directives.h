/* directives.h — configuration directives: the core's table (directives.c), the registered
 * handler types' tables (handler_conf.h), and the appliers they share.
 *
 * A directive has a name, the places it may appear (the top level of the file, a `server`
 * block, a `location` block), how many values it takes, and one function that checks and
 * applies them. Process-wide directives may appear at the top level only (the command line's
 * flags apply them too); site directives anywhere, applied to that place's settings
 * (struct loc_conf: the top level's own, a server's, a location's). Errors are printed as
 * "WHERE: reason" (WHERE is "FILE:LINE", or "lfhttpd: --flag"). A handler type's directives
 * are the same kind of entries, in its own table; their offsets point into its own settings
 * blocks (handler_conf.h). */
#ifndef LF_DIRECTIVES_H
#define LF_DIRECTIVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cidr_list;
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

/* The C type of a number's field (struct directive's `field`). */
enum { F_UNSIGNED = 0, F_SIZE, F_U64, F_INT, F_I64 };
/* The units a number may carry (`unit`): plain, size (k, m, g), duration in ms (ms, s, m, h). */
enum { U_COUNT = 0, U_SIZE, U_MS };

/* The longest duration most directives take: a day, in ms. */
#define DIRECTIVE_DAY_MS 86400000

/* Pieces of table entries: a single value; a number's field, type, unit and range. */
#define DIRECTIVE_ONE 1, 1, "exactly one value"
#define DIRECTIVE_NUM(f, t, u, lo, hi) f, t, u, lo, hi

/* The directive called `name` (the core's, else a registered handler type's), or NULL. */
const struct directive *directive_find(const char *name);
/* Check the number of values and apply them. Returns 0, or -1 (message printed). */
int directive_apply(const struct directive *d, const struct dir_ctx *x, char **args, int nargs);
/* Every directive, the core's table first, then each registered type's: fn for each table
 * (`lfhttpd --list-directives`, tests). */
void directive_tables(void (*fn)(const struct directive *table, size_t n, void *arg), void *arg);

/* A check of a directive's value that only a layer above can make (a TLS ticket key file's
 * contents, a handler type's name): registered from above before the configuration is read.
 * The check returns 0, or -1 with a reason in err ("WHERE: reason" is printed). */
typedef int (*directive_check_fn)(const char *value, char *err, size_t errlen);
void directive_set_check(const char *name, directive_check_fn check);

/* ---- appliers and helpers shared with the handler types' tables ------------------------------ */

/* The field a directive's offset points at (struct config, struct loc_conf, or a handler
 * type's block). */
void *directive_field(const struct directive *d, const struct dir_ctx *x);
/* A number within [min, max] in its unit, into a field of type `field`. */
int directive_number(const struct directive *d, const struct dir_ctx *x, char **args, int nargs);
/* on|off into an int (-1 is unset) or a bool. */
int directive_onoff(const struct directive *d, const struct dir_ctx *x, char **args, int nargs);
/* A header value, or off (""), into a char * field. */
int directive_header_value(const struct directive *d, const struct dir_ctx *x, char **args,
                           int nargs);
/* An absolute path or off (""), into a char * field; `what` says what it takes. */
int directive_path_or_off(const struct directive *d, const struct dir_ctx *x, const char *v,
                          const char *what);
/* Addresses and CIDR ranges added to `l` (all and none, alone, when `keywords`). */
int directive_cidrs_add(const struct dir_ctx *x, struct cidr_list *l, char **args, int nargs,
                        bool keywords);
/* One of `words` (NULL-terminated): its index, or -1 after printing what is allowed. */
int directive_one_of(const struct directive *d, const struct dir_ctx *x, const char *v,
                     const char *const *words, const char *allowed);
/* A number with an optional unit (U_*). Returns 0 or -EINVAL. */
int directive_parse_number(const char *s, int unit, uint64_t *out);
/* A request rate, "10r/s", "600r/m" (nginx's syntax; 1 to 1000000 requests): the time
 * between two requests at that rate, in ns (limit_req_per_ip). Returns 0 or -1. */
int directive_parse_rate(const char *s, uint64_t *interval_ns);
/* Is `s` a valid header field value (no control characters but HTAB)? */
bool directive_header_value_ok(const char *s);
/* Replace *field with a copy of `v`: 0, or -1 with *field unchanged. */
int directive_set_str(char **field, const char *v);
/* "WHERE: out of memory"; returns -1. */
int directive_oom(const struct dir_ctx *x);

#endif
