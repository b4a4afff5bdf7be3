/* builtin_conf.h — the built-in handlers' process-wide settings: their directives
 * (status_allow, test_endpoints) and their block (conf/handler_conf.h). */
#ifndef LF_BUILTIN_CONF_H
#define LF_BUILTIN_CONF_H

#include <stdbool.h>

#include "base/netaddr.h"
#include "conf/config.h"

struct builtin_top {
    struct cidr_list status_allow; /* who may see /server-status and /metrics */
    bool status_allow_given;       /* the file set it (replacing the loopback default) */
    char test_endpoints[256];      /* prefix of the test endpoints, "" = off */
};

extern const struct handler_conf_ops builtin_conf_ops;
extern unsigned builtin_conf_slot;

static inline const struct builtin_top *builtin_top(const struct config *cfg)
{
    return cfg->handler_conf[builtin_conf_slot];
}

#endif
