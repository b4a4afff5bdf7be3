/* listing.c — directory listings (`directory_listing on`): HTML, or JSON for Accept:
 * application/json, sorted by ?sort=name|size|mtime&order=asc|desc; see static_file.h. Not a
 * hot path: allocation is fine here. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/hex.h"
#include "base/json.h"
#include "exchange/exchange.h"
#include "http/http_date.h"
#include "static/file_cache.h"
#include "static/static_conf.h"
#include "static/headers.h"
#include "static/static_file.h"

struct dirent_info {
    char *name;
    bool dir;
    off_t size;
    time_t mtime;
};

/* qsort has no context argument: the sort order of the listing being built on this thread. */
static _Thread_local int tl_sort_key, tl_sort_desc;

static int cmp_entries(const void *a, const void *b)
{
    const struct dirent_info *x = a, *y = b;
    int c;
    if (x->dir != y->dir)
        return x->dir ? -1 : 1; /* directories first */
    if (tl_sort_key == 1)
        c = x->size < y->size ? -1 : x->size > y->size;
    else if (tl_sort_key == 2)
        c = x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
    else
        c = 0;
    if (c == 0)
        c = strcmp(x->name, y->name);
    return tl_sort_desc ? -c : c;
}

/* Write `s` HTML-escaped. */
static void html_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Write `s` percent-encoded for use as a relative URL path segment inside an HTML attribute:
 * only unreserved characters stay, so nothing in the result needs HTML escaping. */
static void url_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[3];
        if (hex_pct_keeps(c, "")) {
            fputc(c, f);
        } else {
            hex_pct(c, esc);
            fwrite(esc, 1, sizeof(esc), f);
        }
    }
}

/* A name as a JSON string: UTF-8 kept, a byte that is not valid UTF-8 as U+FFFD, so the
 * listing is valid JSON whatever the file system holds (base/json.h). */
static void json_string(FILE *f, const char *s)
{
    char buf[NAME_MAX * 6 + 3]; /* six bytes at most per input byte, the quotes, the NUL */
    size_t pos = 1;
    buf[0] = '"';
    if (!json_escape_script(buf, sizeof(buf) - 1, &pos, s, strlen(s)))
        pos = 1; /* longer than a name can be: not reached */
    buf[pos++] = '"';
    fwrite(buf, 1, pos, f);
}

static void human_size(char *out, size_t cap, off_t size)
{
    static const char units[] = "BKMGTP";
    double v = (double)size;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, cap, "%lld B", (long long)size);
    else
        snprintf(out, cap, "%.1f %ciB", v, units[u]);
}

/* The entries of directory `d` (dot-files only when the location shows hidden files), or NULL
 * when out of memory (a listing that leaves entries out would be a lie: 503 instead). */
static struct dirent_info *read_entries(DIR *d, const struct loc_conf *lc, size_t *count)
{
    size_t n = 0, cap = 64;
    struct dirent_info *ents = malloc(cap * sizeof(*ents));
    bool short_of_memory = !ents;
    struct dirent *de;
    while (!short_of_memory && (de = readdir(d))) {
        if (de->d_name[0] == '.' && (!static_conf(lc)->hidden_files || !strcmp(de->d_name, ".") ||
                                     !strcmp(de->d_name, "..")))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, 0) < 0)
            continue; /* dangling symlink or vanished */
        if (n == cap) {
            struct dirent_info *ne = realloc(ents, (cap *= 2) * sizeof(*ents));
            if (!ne) {
                short_of_memory = true;
                break;
            }
            ents = ne;
        }
        ents[n++] = (struct dirent_info){ strdup(de->d_name), S_ISDIR(st.st_mode), st.st_size,
                                          st.st_mtim.tv_sec };
        if (!ents[n - 1].name) {
            n--;
            short_of_memory = true;
        }
    }
    if (short_of_memory) {
        for (size_t i = 0; i < n; i++)
            free(ents[i].name);
        free(ents);
        ents = NULL;
        n = 0;
    }
    *count = n;
    return ents;
}

static void listing_json(FILE *f, const struct dirent_info *ents, size_t n)
{
    fputs("[", f);
    for (size_t i = 0; i < n; i++) {
        char date[32];
        http_date_format(ents[i].mtime, date);
        fputs(i ? ",\n {\"name\":" : "\n {\"name\":", f);
        json_string(f, ents[i].name);
        fprintf(f, ",\"type\":\"%s\",\"size\":%lld,\"mtime\":\"%s\"}",
                ents[i].dir ? "directory" : "file", (long long)ents[i].size, date);
    }
    fputs("\n]\n", f);
}

static void listing_html(FILE *f, const char *path, size_t path_len,
                         const struct dirent_info *ents, size_t n)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
          "<title>Index of ", f);
    html_escape(f, path);
    fputs("</title><style>body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:"
          "60rem;padding:1rem}table{width:100%;border-collapse:collapse}th,td{text-align:"
          "left;padding:.35rem .5rem;border-bottom:1px solid #ddd}td.s,th.s{text-align:right;"
          "white-space:nowrap}a{text-decoration:none}@media(max-width:40rem){td.m,th.m"
          "{display:none}}@media(prefers-color-scheme:dark){body{background:#111;color:#ddd}"
          "a{color:#8bf}th,td{border-color:#333}}</style></head>\n<body><h1>Index of ", f);
    html_escape(f, path);
    fputs("</h1>\n<table><thead><tr><th><a href=\"?sort=name\">Name</a></th>"
          "<th class=\"s\"><a href=\"?sort=size&amp;order=desc\">Size</a></th>"
          "<th class=\"m\"><a href=\"?sort=mtime&amp;order=desc\">Modified</a></th></tr>"
          "</thead><tbody>\n", f);
    if (path_len > 1)
        fputs("<tr><td><a href=\"../\">../</a></td><td class=\"s\">-</td>"
              "<td class=\"m\"></td></tr>\n", f);
    for (size_t i = 0; i < n; i++) {
        char date[32], sz[32];
        http_date_format(ents[i].mtime, date);
        human_size(sz, sizeof(sz), ents[i].size);
        fputs("<tr><td><a href=\"./", f);
        url_escape(f, ents[i].name);
        fputs(ents[i].dir ? "/\">" : "\">", f);
        html_escape(f, ents[i].name);
        fprintf(f, "%s</a></td><td class=\"s\">%s</td><td class=\"m\">%s</td></tr>\n",
                ents[i].dir ? "/" : "", ents[i].dir ? "-" : sz, date);
    }
    fputs("</tbody></table></body></html>\n", f);
}

/* The listing into an anonymous file: its descriptor (at its end), or -1. */
static int write_listing(const struct exchange *ex, bool json, const struct dirent_info *ents,
                         size_t n)
{
    int fd = memfd_create("lfhttpd-listing", MFD_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (json)
        listing_json(f, ents, n);
    else
        listing_html(f, ex->path, ex->path_len, ents, n);
    /* stdio allocates its buffer on the first write: a listing it could not write is not
     * sent half-written. */
    bool written = fflush(f) == 0 && !ferror(f);
    int out = written ? dup(fd) : -1;
    fclose(f);
    return out;
}

int static_list_directory(struct exchange *ex)
{
    const struct loc_conf *lc = ex->loc;
    const struct http_request *req = ex->req;
    const char *rel = ex->path_len > 1 ? ex->path + 1 : ".";
    int dfd = fc_open_beneath(lc->root_fd, rel, static_conf(lc)->symlinks, O_DIRECTORY);
    if (dfd < 0)
        return ex_error(ex, dfd == -ENOENT ? 404 : 403);
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return ex_error(ex, 500);
    }
    size_t n;
    struct dirent_info *ents = read_entries(d, lc, &n);
    closedir(d);
    if (!ents)
        return ex_error(ex, 503);

    /* ?sort=name|size|mtime&order=asc|desc */
    tl_sort_key = 0;
    tl_sort_desc = 0;
    struct strview q = req->query;
    if (q.ptr) {
        if (memmem(q.ptr, q.len, "sort=size", 9))
            tl_sort_key = 1;
        else if (memmem(q.ptr, q.len, "sort=mtime", 10))
            tl_sort_key = 2;
        tl_sort_desc = memmem(q.ptr, q.len, "order=desc", 10) != NULL;
    }
    qsort(ents, n, sizeof(*ents), cmp_entries);
    struct strview accept = HTTP_KNOWN(req, H_ACCEPT);
    bool json = accept.ptr && memmem(accept.ptr, accept.len, "application/json", 16);
    int out = write_listing(ex, json, ents, n);
    for (size_t i = 0; i < n; i++)
        free(ents[i].name);
    free(ents);
    if (out < 0)
        return ex_error(ex, 503);
    off_t total = lseek(out, 0, SEEK_END);

    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 200, ex->date);
    if (json)
        RESP_LIT(&r, "Content-Type: application/json\r\n");
    else
        RESP_LIT(&r, "Content-Type: text/html; charset=utf-8\r\n");
    RESP_LIT(&r, "Vary: Accept\r\n");
    static_add_location_headers(&r, lc);
    return ex_send_file(ex, &r, out, 0, (size_t)total);
}

