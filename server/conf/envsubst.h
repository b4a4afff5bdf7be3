/* envsubst.h — environment variables in configuration values.
 *
 * `${NAME}` is replaced by the value of the environment variable NAME, `${NAME:-default}` by
 * its value or, when it is unset or empty, by `default` (as the shell does; `${NAME}` of a
 * variable set to "" is empty); `$${` stands for a
 * literal `${`. A `$` not followed by `{` is kept as it is. NAME is a letter or `_` followed by
 * letters, digits and `_`. An unset variable without a default is an error: a configuration
 * that silently took an empty value would be wrong without a word. The loader (config.c) runs
 * every value of every line through env_subst(); directive names are not substituted. */
#ifndef LF_ENVSUBST_H
#define LF_ENVSUBST_H

#include <stdbool.h>
#include <stddef.h>

/* Substitute into out[cap] (NUL-terminated). Returns the length written, or -1 with the
 * reason in err[errcap] (no file or line: the caller prefixes them). *used is set when at least
 * one variable's value (not only a default) went into the result, so that the caller can keep
 * the value out of its messages. */
int env_subst(const char *in, char *out, size_t cap, bool *used, char *err, size_t errcap);

#endif
