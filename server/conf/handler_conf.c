/* handler_conf.c — the registry of handler types' configuration; see handler_conf.h. */
#include "conf/handler_conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "conf/directives.h"

static const struct handler_conf_ops *types[HANDLER_TYPES_MAX];
static unsigned ntypes;

int conf_register(const struct handler_conf_ops *ops)
{
    for (unsigned i = 0; i < ntypes; i++)
        if (types[i] == ops)
            return (int)i;
    if (ntypes == HANDLER_TYPES_MAX)
        return -1;
    if (ops->slot)
        *ops->slot = ntypes;
    types[ntypes] = ops;
    return (int)ntypes++;
}

const struct directive *conf_directive_find(const char *name)
{
    for (unsigned i = 0; i < ntypes; i++)
        for (size_t k = 0; k < types[i]->ndirectives; k++)
            if (!strcmp(types[i]->directives[k].name, name))
                return &types[i]->directives[k];
    return NULL;
}

void *conf_directive_block(const struct directive *d, struct config *cfg, struct loc_conf *lc)
{
    for (unsigned i = 0; i < ntypes; i++) {
        const struct directive *t = types[i]->directives;
        if (d >= t && d < t + types[i]->ndirectives)
            return d->in == IN_TOP ? cfg->handler_conf[i] : lc->handler_conf[i];
    }
    return NULL;
}

void conf_directive_tables(void (*fn)(const struct directive *table, size_t n, void *arg),
                           void *arg)
{
    for (unsigned i = 0; i < ntypes; i++)
        if (types[i]->ndirectives)
            fn(types[i]->directives, types[i]->ndirectives, arg);
}

/* ---- a location's blocks ------------------------------------------------------------------ */

int conf_loc_init(struct loc_conf *lc)
{
    for (unsigned i = 0; i < ntypes; i++) {
        if (!types[i]->loc_size)
            continue;
        if (!(lc->handler_conf[i] = calloc(1, types[i]->loc_size))) {
            conf_loc_free(lc); /* the blocks made so far: all still unset */
            return -1;
        }
        if (types[i]->loc_init)
            types[i]->loc_init(lc->handler_conf[i]);
    }
    return 0;
}

void conf_loc_defaults(struct loc_conf *lc)
{
    for (unsigned i = 0; i < ntypes; i++)
        if (lc->handler_conf[i] && types[i]->loc_defaults)
            types[i]->loc_defaults(lc->handler_conf[i]);
}

void conf_loc_defaults_free(struct loc_conf *lc)
{
    for (unsigned i = 0; i < ntypes; i++) {
        free(lc->handler_conf[i]); /* what defaults point at is static */
        lc->handler_conf[i] = NULL;
    }
}

int conf_loc_merge(struct loc_conf *lc, const struct loc_conf *parent)
{
    for (unsigned i = 0; i < ntypes; i++)
        if (lc->handler_conf[i] && types[i]->loc_merge &&
            types[i]->loc_merge(lc->handler_conf[i], parent->handler_conf[i]) < 0)
            return -1;
    return 0;
}

int conf_loc_check(const struct loc_conf *lc)
{
    for (unsigned i = 0; i < ntypes; i++)
        if (lc->handler_conf[i] && types[i]->loc_check &&
            types[i]->loc_check(lc->handler_conf[i], lc) < 0)
            return -1;
    return 0;
}

void conf_loc_admin(struct loc_conf *lc)
{
    for (unsigned i = 0; i < ntypes; i++)
        if (lc->handler_conf[i] && types[i]->loc_admin)
            types[i]->loc_admin(lc->handler_conf[i]);
}

void conf_loc_free(struct loc_conf *lc)
{
    for (unsigned i = 0; i < ntypes; i++) {
        if (lc->handler_conf[i] && types[i]->loc_free)
            types[i]->loc_free(lc->handler_conf[i]);
        free(lc->handler_conf[i]);
        lc->handler_conf[i] = NULL;
    }
}

/* ---- a configuration's blocks ------------------------------------------------------------- */

int conf_top_init(struct config *cfg)
{
    for (unsigned i = 0; i < ntypes; i++) {
        if (!types[i]->top_size)
            continue;
        if (!(cfg->handler_conf[i] = calloc(1, types[i]->top_size)) ||
            (types[i]->top_init && types[i]->top_init(cfg->handler_conf[i]) < 0))
            return -1; /* conf_top_free frees what was made */
    }
    return 0;
}

void conf_top_free(struct config *cfg)
{
    for (unsigned i = 0; i < ntypes; i++) {
        if (cfg->handler_conf[i] && types[i]->top_free)
            types[i]->top_free(cfg->handler_conf[i]);
        free(cfg->handler_conf[i]);
        cfg->handler_conf[i] = NULL;
    }
}

int conf_finish(struct config *cfg)
{
    for (unsigned i = 0; i < ntypes; i++)
        if (types[i]->finish && types[i]->finish(cfg, cfg->handler_conf[i]) < 0)
            return -1;
    return 0;
}

void conf_watch_files(const struct config *cfg, void (*fn)(const char *path, void *arg),
                      void *arg)
{
    for (unsigned i = 0; i < ntypes; i++)
        if (types[i]->watch_files && cfg->handler_conf[i])
            types[i]->watch_files(cfg->handler_conf[i], fn, arg);
}
