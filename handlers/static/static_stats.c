/* static_stats.c — the static handler type's counters for /server-status and /metrics: its
 * open-file cache (per generation) and its compressor (process-wide). */
#include <string.h>

#include "compress/compress.h"
#include "log/stats_writer.h"
#include "static/file_cache.h"

static void cache_stats(const struct fc_stats *fc, struct stats_writer *w)
{
    if (w->format == STATS_JSON) {
        stats_printf(w, "\"file_cache\":{\"hits\":%llu,\"misses\":%llu,\"revalidations\":%llu,"
                        "\"evictions\":%llu,\"entries\":%llu,\"bytes\":%llu},",
                     (unsigned long long)fc->hits, (unsigned long long)fc->misses,
                     (unsigned long long)fc->revalidations, (unsigned long long)fc->evictions,
                     (unsigned long long)fc->entries, (unsigned long long)fc->bytes);
        return;
    }
    stats_metric(w, "lfhttpd_file_cache_hits_total", "counter", "Open-file cache hits.",
                 fc->hits);
    stats_metric(w, "lfhttpd_file_cache_misses_total", "counter", "Open-file cache misses.",
                 fc->misses);
    stats_metric(w, "lfhttpd_file_cache_entries", "gauge", "Open-file cache entries.",
                 fc->entries);
    stats_metric(w, "lfhttpd_file_cache_bytes", "gauge", "Open-file cache bytes.", fc->bytes);
}

void static_file_stats(void *process, void *generation, const struct runtime *rt,
                       struct stats_writer *w)
{
    (void)rt;
    struct fc_stats fc;
    memset(&fc, 0, sizeof(fc));
    struct file_cache *c = static_file_cache(generation);
    if (c)
        fc_get_stats(c, &fc);
    cache_stats(&fc, w);
    compress_write_stats(process, w);
}
