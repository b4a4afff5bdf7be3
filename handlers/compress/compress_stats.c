/* compress_stats.c — the compressor's counters, written for /server-status and /metrics. */
#include "compress/compress.h"
#include "log/stats_writer.h"

/* "name":{"br":N,"zstd":N,"gzip":N,"dcz":N}, */
static void json_by_coding(struct stats_writer *w, const char *name,
                           const uint64_t v[COMPRESS_SENT_CODINGS])
{
    stats_printf(w, "\"%s\":{", name);
    for (int i = 0; i < COMPRESS_SENT_CODINGS; i++)
        stats_printf(w, "%s\"%s\":%llu", i ? "," : "", compress_sent_names[i],
                     (unsigned long long)v[i]);
    stats_printf(w, "},");
}

static void json(const struct compress_stats *z, struct stats_writer *w)
{
    stats_printf(w, "\"compress\":{\"made\":{\"br\":%llu,\"zstd\":%llu,\"gzip\":%llu},"
                    "\"bytes_in\":%llu,\"bytes_out\":%llu,\"not_smaller\":%llu,\"failed\":%llu,"
                    "\"disk_hits\":%llu,\"disk_writes\":%llu,\"disk_evictions\":%llu,"
                    "\"dropped\":%llu,\"queued\":%u,\"running\":%u,",
                 (unsigned long long)z->made[CODING_BR], (unsigned long long)z->made[CODING_ZSTD],
                 (unsigned long long)z->made[CODING_GZIP], (unsigned long long)z->bytes_in,
                 (unsigned long long)z->bytes_out, (unsigned long long)z->not_smaller,
                 (unsigned long long)z->failed, (unsigned long long)z->disk_hits,
                 (unsigned long long)z->disk_writes, (unsigned long long)z->disk_evictions,
                 (unsigned long long)z->dropped, z->queued, z->running);
    json_by_coding(w, "responses", z->sent);
    json_by_coding(w, "saved_bytes", z->saved);
    stats_printf(w, "\"dcz_made\":%llu,\"dictionaries_stored\":%llu,",
                 (unsigned long long)z->dcz_made, (unsigned long long)z->dicts_stored);
    stats_printf(w, "\"dynamic\":{\"made\":{\"zstd\":%llu,\"gzip\":%llu},\"bytes_in\":%llu,"
                    "\"bytes_out\":%llu,\"busy\":%llu,\"failed\":%llu,\"active\":%u}},",
                 (unsigned long long)z->stream_made[CODING_ZSTD],
                 (unsigned long long)z->stream_made[CODING_GZIP], (unsigned long long)z->stream_in,
                 (unsigned long long)z->stream_out, (unsigned long long)z->stream_busy,
                 (unsigned long long)z->stream_failed, z->stream_active);
}

/* A counter family labelled by coding: v[i] for the codings names[from..to). */
static void by_coding_of(struct stats_writer *w, const char *name, const char *help,
                         const char *const names[], const uint64_t v[], int from, int to)
{
    stats_printf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (int i = from; i < to; i++)
        stats_printf(w, "%s{coding=\"%s\"} %llu\n", name, names[i], (unsigned long long)v[i]);
}

/* The same for the codings a response is sent in, dcz included. */
static void by_coding(struct stats_writer *w, const char *name, const char *help,
                      const uint64_t v[COMPRESS_SENT_CODINGS])
{
    by_coding_of(w, name, help, compress_sent_names, v, 0, COMPRESS_SENT_CODINGS);
}

static void prometheus(const struct compress_stats *z, struct stats_writer *w)
{
    by_coding_of(w, "lfhttpd_compress_variants_total", "Compressed variants made, by coding.",
                 coding_names, z->made, 0, CODING_COUNT);
    stats_metric(w, "lfhttpd_compress_input_bytes_total", "counter",
                 "Bytes of the files compressed into variants.", z->bytes_in);
    stats_metric(w, "lfhttpd_compress_output_bytes_total", "counter",
                 "Bytes of the variants made.", z->bytes_out);
    stats_metric(w, "lfhttpd_compress_not_smaller_total", "counter",
                 "Compressions given up: the result was not smaller.", z->not_smaller);
    stats_metric(w, "lfhttpd_compress_cache_dir_hits_total", "counter",
                 "Variants found in compress_cache_dir.", z->disk_hits);
    stats_metric(w, "lfhttpd_compress_queued", "gauge", "Compression jobs waiting.", z->queued);
    by_coding(w, "lfhttpd_compress_responses_total",
              "Static files sent whole in a compressed representation, by coding (dcz: "
              "against a dictionary).", z->sent);
    by_coding(w, "lfhttpd_compress_saved_bytes_total",
              "Bytes those responses were shorter than identity, by coding.", z->saved);
    stats_metric(w, "lfhttpd_compress_dcz_variants_total", "counter",
                 "dcz variants made (compress_dictionary).", z->dcz_made);
    stats_metric(w, "lfhttpd_compress_dictionaries_stored_total", "counter",
                 "File versions put into the dictionary store.", z->dicts_stored);
    by_coding_of(w, "lfhttpd_compress_dynamic_responses_total",
                 "Streamed responses compressed (compress_dynamic), by coding.", coding_names,
                 z->stream_made, CODING_ZSTD, CODING_GZIP + 1);
    stats_metric(w, "lfhttpd_compress_dynamic_input_bytes_total", "counter",
                 "Bytes of streamed bodies compressed.", z->stream_in);
    stats_metric(w, "lfhttpd_compress_dynamic_output_bytes_total", "counter",
                 "Bytes they compressed into.", z->stream_out);
    stats_metric(w, "lfhttpd_compress_dynamic_busy_total", "counter",
                 "Streamed responses sent identity: compress_dynamic_max were being compressed.",
                 z->stream_busy);
    stats_metric(w, "lfhttpd_compress_dynamic_active", "gauge",
                 "Streamed responses being compressed.", z->stream_active);
}

void compress_write_stats(void *process, struct stats_writer *w)
{
    struct compress_stats z;
    compress_get_stats(process, &z);
    if (w->format == STATS_JSON)
        json(&z, w);
    else
        prometheus(&z, w);
}
