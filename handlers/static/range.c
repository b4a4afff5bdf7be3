/* range.c — byte ranges; see range.h. */
#include "static/range.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "exchange/exchange.h"
#include "static/file_cache.h"
#include "static/headers.h"
#include "static/static_file.h"

int range_parse(struct strview hdr, uint64_t size, struct range *out)
{
    if (hdr.len < 6 || strncasecmp(hdr.ptr, "bytes=", 6))
        return -1;
    struct strview list = { hdr.ptr + 6, hdr.len - 6 };
    struct strview item;
    int n = 0, specs = 0;
    while (sv_list_next(&list, &item)) {
        if (++specs > RANGE_MAX)
            return -1;
        const char *dash = memchr(item.ptr, '-', item.len);
        if (!dash)
            return -1;
        struct strview a = sv_trim((struct strview){ item.ptr, (size_t)(dash - item.ptr) });
        size_t blen = (size_t)(item.ptr + item.len - dash - 1);
        struct strview b = sv_trim((struct strview){ dash + 1, blen });
        uint64_t first = 0, last = 0;
        bool has_a = a.len > 0, has_b = b.len > 0;
        if (!has_a && !has_b)
            return -1;
        for (size_t i = 0; i < a.len; i++) {
            if (a.ptr[i] < '0' || a.ptr[i] > '9' || first > (UINT64_MAX - 9) / 10)
                return -1;
            first = first * 10 + (uint64_t)(a.ptr[i] - '0');
        }
        for (size_t i = 0; i < b.len; i++) {
            if (b.ptr[i] < '0' || b.ptr[i] > '9' || last > (UINT64_MAX - 9) / 10)
                return -1;
            last = last * 10 + (uint64_t)(b.ptr[i] - '0');
        }
        if (!has_a) { /* suffix: the last `last` bytes */
            if (last == 0 || size == 0)
                continue;
            first = last >= size ? 0 : size - last;
            last = size - 1;
        } else {
            if (has_b && last < first)
                return -1; /* invalid spec: ignore the whole header */
            if (first >= size)
                continue;  /* unsatisfiable spec */
            if (!has_b || last >= size)
                last = size - 1;
        }
        out[n++] = (struct range){ first, last };
    }
    if (specs == 0)
        return -1;
    /* Coalesce overlapping or adjacent ranges into the earliest of them; the others keep the
     * order in which they were requested (as RFC 7233 4.1 asked of multipart responses). */
    int m = 0;
    for (int i = 0; i < n; i++) {
        struct range r = out[i];
        bool merged;
        do {
            merged = false;
            for (int j = 0; j < m; j++) {
                if (r.first <= out[j].last + 1 && out[j].first <= r.last + 1) {
                    r.first = r.first < out[j].first ? r.first : out[j].first;
                    r.last = r.last > out[j].last ? r.last : out[j].last;
                    for (int k = j; k < m - 1; k++) /* absorbed: r takes its place below */
                        out[k] = out[k + 1];
                    m--;
                    merged = true;
                    break;
                }
            }
        } while (merged);
        out[m++] = r;
    }
    return m;
}

int range_send_multipart(struct exchange *ex, struct fc_entry *e, const struct range *rg,
                         int n)
{
    char boundary[40];
    snprintf(boundary, sizeof(boundary), "lfhttpd-%016llx",
             (unsigned long long)((uint64_t)(uintptr_t)e ^ (uint64_t)time(NULL) ^
                                  (uint64_t)e->st.st_ino << 17));
    int fd = memfd_create("lfhttpd-multipart", MFD_CLOEXEC);
    if (fd < 0)
        return ex_error(ex, 503);
    uint64_t size = (uint64_t)e->st.st_size;
    for (int i = 0; i < n; i++) {
        char part[512];
        int hl = snprintf(part, sizeof(part),
                          "\r\n--%s\r\nContent-Type: %s\r\n"
                          "Content-Range: bytes %llu-%llu/%llu\r\n\r\n",
                          boundary, e->type, (unsigned long long)rg[i].first,
                          (unsigned long long)rg[i].last, (unsigned long long)size);
        if (write(fd, part, (size_t)hl) != hl)
            goto fail;
        uint64_t left = rg[i].last - rg[i].first + 1;
        off_t off = (off_t)rg[i].first;
        while (left) {
            ssize_t c;
            if (e->body) {
                c = write(fd, e->body + off, left);
            } else {
                c = copy_file_range(e->fd, &off, fd, NULL, left, 0);
                if (c < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS)) {
                    char buf[16384];
                    ssize_t rd = pread(e->fd, buf, left < sizeof(buf) ? left : sizeof(buf), off);
                    c = rd > 0 ? write(fd, buf, (size_t)rd) : -1;
                    if (c > 0)
                        off += c;
                }
            }
            if (c <= 0)
                goto fail;
            if (e->body)
                off += c;
            left -= (uint64_t)c;
        }
    }
    char tail[64];
    int tl = snprintf(tail, sizeof(tail), "\r\n--%s--\r\n", boundary);
    if (write(fd, tail, (size_t)tl) != tl)
        goto fail;
    off_t total = lseek(fd, 0, SEEK_CUR);

    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 206, ex->date);
    RESP_LIT(&r, "Content-Type: multipart/byteranges; boundary=");
    resp_add(&r, boundary, strlen(boundary));
    RESP_LIT(&r, "\r\n");
    /* The entry's header block starts with its Content-Type line: skip that line. */
    const char *rest = memmem(e->headers, e->headers_len, "\r\n", 2);
    resp_add(&r, rest + 2, e->headers_len - (size_t)(rest + 2 - e->headers));
    static_add_expires(&r, ex->loc);
    return ex_send_file(ex, &r, fd, 0, (size_t)total);
fail:
    close(fd);
    return ex_error(ex, 500);
}
