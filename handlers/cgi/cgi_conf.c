/* cgi_conf.c — the CGI directives and settings; see cgi_conf.h. */
#include "cgi/cgi_conf.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "conf/directives.h"
#include "log/diag.h"

unsigned cgi_conf_slot;

/* cgi_env_pass NAME...|none */
static int d_env_pass(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct cgi_top *ct = directive_field(d, x);
    if (nargs > CGI_MAX_ENV_PASS) {
        diag("%s: at most %d names for '%s'\n", x->where, CGI_MAX_ENV_PASS, d->name);
        return -1;
    }
    ct->nenv_pass = 0;
    if (nargs == 1 && !strcmp(args[0], "none"))
        return 0;
    for (int i = 0; i < nargs; i++) {
        const char *v = args[i];
        bool ok = *v && strlen(v) < sizeof(ct->env_pass[0]) && !isdigit((unsigned char)*v);
        for (const char *p = v; ok && *p; p++)
            ok = isalnum((unsigned char)*p) || *p == '_';
        if (!ok || !strncmp(v, "HTTP_", 5)) {
            diag("%s: invalid environment variable name '%s' for '%s'\n", x->where, v,
                 d->name);
            return -1;
        }
        snprintf(ct->env_pass[ct->nenv_pass++], sizeof(ct->env_pass[0]), "%s", v);
    }
    return 0;
}

#define TOP(field) offsetof(struct cgi_top, field)
#define ONE DIRECTIVE_ONE
#define NUM DIRECTIVE_NUM

static const struct directive cgi_directives[] = {
    { "cgi_timeout", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout), F_UNSIGNED, U_MS, 1, DIRECTIVE_DAY_MS) },
    { "cgi_max", IN_TOP, ONE, directive_number, NUM(TOP(max), F_UNSIGNED, U_COUNT, 1, 100000) },
    { "cgi_env_pass", IN_TOP, 1, 0, "one or more values", d_env_pass, 0, 0, 0, 0, 0 },
};

static int top_init(void *b)
{
    struct cgi_top *ct = b;
    ct->timeout = 30000;
    ct->max = 64;
    snprintf(ct->env_pass[0], sizeof(ct->env_pass[0]), "PATH");
    ct->nenv_pass = 1;
    return 0;
}

const struct handler_conf_ops cgi_conf_ops = {
    .name = "cgi",
    .slot = &cgi_conf_slot,
    .directives = cgi_directives,
    .ndirectives = sizeof(cgi_directives) / sizeof(cgi_directives[0]),
    .top_size = sizeof(struct cgi_top),
    .top_init = top_init,
};
