/* runtime.c — see runtime.h. */
#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>

#include "access_log.h"
#include "file_cache.h"
#include "mime.h"
#include "router.h"
#include "tls.h"

static void runtime_free(struct runtime *rt)
{
    router_destroy(rt);
    if (rt->tls)
        tls_ctx_unref(rt->tls); /* connections hold their own references */
    access_log_close(rt);
    fc_destroy(rt->fc);
    mime_table_free(rt->mime);
    config_free(&rt->cfg);
    free(rt);
}

struct runtime *runtime_build(struct server *srv, struct config *cfg, unsigned generation)
{
    struct runtime *rt = calloc(1, sizeof(*rt));
    if (!rt) {
        fprintf(stderr, "lfhttpd: out of memory\n");
        config_free(cfg);
        return NULL;
    }
    rt->cfg = *cfg; /* takes over the allocations */
    rt->generation = generation;
    rt->access_fd = -1;
    atomic_store_explicit(&rt->refs, 1, memory_order_relaxed);
    char err[512] = "";
    rt->mime = mime_table_load(rt->cfg.mime_file[0] ? rt->cfg.mime_file : NULL, err, sizeof(err));
    if (!rt->mime) {
        fprintf(stderr, "%s\n", err);
        goto fail;
    }
    rt->fc = fc_create(rt->cfg.file_cache_entries, rt->cfg.file_cache_size,
                       rt->cfg.file_cache_valid, rt->mime);
    if (!rt->fc) {
        fprintf(stderr, "lfhttpd: out of memory\n");
        goto fail;
    }
    /* -t checks the access log's path (config.c) but does not create the file. */
    if (router_init(srv, rt) < 0 || (!rt->cfg.test_only && access_log_open(rt) < 0))
        goto fail;
    if (rt->cfg.ncerts > 0) {
        rt->tls = tls_ctx_create(&rt->cfg); /* prints its own FILE:LINE error line */
        if (!rt->tls)
            goto fail;
    }
    return rt;
fail:
    runtime_free(rt);
    return NULL;
}

void runtime_ref(struct runtime *rt)
{
    atomic_fetch_add_explicit(&rt->refs, 1, memory_order_relaxed);
}

void runtime_unref(struct runtime *rt)
{
    if (rt && atomic_fetch_sub_explicit(&rt->refs, 1, memory_order_acq_rel) == 1)
        runtime_free(rt);
}
