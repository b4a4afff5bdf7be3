/* cgi_conf.h — the CGI handler's process-wide settings: its directives (cgi_timeout, cgi_max,
 * cgi_env_pass) and its block (conf/handler_conf.h). */
#ifndef LF_CGI_CONF_H
#define LF_CGI_CONF_H

#include "conf/config.h"

#define CGI_MAX_ENV_PASS 32

struct cgi_top {
    unsigned timeout;          /* ms a script may run before its process group is killed */
    unsigned max;              /* scripts running at once; more -> 503 */
    char env_pass[CGI_MAX_ENV_PASS][64]; /* server environment variables scripts get */
    unsigned nenv_pass;
};

extern const struct handler_conf_ops cgi_conf_ops;
/* The handler type (cgi.c), for the registry (handlers/registry.c). */
struct handler_ops;
extern const struct handler_ops cgi_handler;
extern unsigned cgi_conf_slot;

static inline const struct cgi_top *cgi_top(const struct config *cfg)
{
    return cfg->handler_conf[cgi_conf_slot];
}

#endif
