/* builtin_conf.c — the built-in handlers' directives and settings; see builtin_conf.h. */
#include "builtin/builtin_conf.h"

#include <stdio.h>
#include <string.h>

#include "conf/directives.h"
#include "log/diag.h"

unsigned builtin_conf_slot;

/* status_allow CIDR...|all|none: the first replaces the loopback default. */
static int d_status_allow(const struct directive *d, const struct dir_ctx *x, char **args,
                          int nargs)
{
    struct builtin_top *bt = directive_field(d, x);
    if (!bt->status_allow_given) {
        cidr_list_free(&bt->status_allow);
        bt->status_allow_given = true;
    }
    return directive_cidrs_add(x, &bt->status_allow, args, nargs, true);
}

/* test_endpoints /PREFIX/|off */
static int d_test_endpoints(const struct directive *d, const struct dir_ctx *x, char **args,
                            int nargs)
{
    (void)nargs;
    struct builtin_top *bt = directive_field(d, x);
    const char *v = args[0];
    if (!strcmp(v, "off")) {
        bt->test_endpoints[0] = '\0';
        return 0;
    }
    if (v[0] != '/' || strlen(v) >= sizeof(bt->test_endpoints) || strstr(v, "..") ||
        strpbrk(v, "?#%* \t")) {
        diag("%s: '%s' takes a path prefix such as /_test/, or off\n", x->where,
             d->name);
        return -1;
    }
    snprintf(bt->test_endpoints, sizeof(bt->test_endpoints), "%s", v);
    return 0;
}

static const struct directive builtin_directives[] = {
    { "status_allow", IN_TOP, 1, 0, "one or more addresses or CIDR ranges", d_status_allow,
      0, 0, 0, 0, 0 },
    { "test_endpoints", IN_TOP, DIRECTIVE_ONE, d_test_endpoints, 0, 0, 0, 0, 0 },
};

static int top_init(void *b)
{
    struct builtin_top *bt = b;
    if (cidr_list_add(&bt->status_allow, "127.0.0.0/8") < 0 ||
        cidr_list_add(&bt->status_allow, "::1") < 0)
        return -1;
    return 0;
}

static void top_free(void *b)
{
    cidr_list_free(&((struct builtin_top *)b)->status_allow);
}

/* The test endpoints' location, in every site but the admin one, once the prefix is known. */
static int finish(struct config *cfg, const void *top)
{
    const struct builtin_top *bt = top;
    if (!bt->test_endpoints[0])
        return 0;
    return site_add_builtin(&cfg->sites, bt->test_endpoints, "test", NULL, false);
}

const struct handler_conf_ops builtin_conf_ops = {
    .name = "builtin",
    .slot = &builtin_conf_slot,
    .directives = builtin_directives,
    .ndirectives = sizeof(builtin_directives) / sizeof(builtin_directives[0]),
    .top_size = sizeof(struct builtin_top),
    .top_init = top_init,
    .top_free = top_free,
    .finish = finish,
};
