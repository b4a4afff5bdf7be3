/* accept_encoding.c — Accept-Encoding parsing; see accept_encoding.h. */
#include "compress/accept_encoding.h"

#include <string.h>

int accept_parse_q(const char *p, const char *end)
{
    while (p < end) {
        while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
            p++;
        if (end - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            p += 2;
            if (p == end || (*p != '0' && *p != '1'))
                return -1;
            int q = (*p++ - '0') * 1000;
            if (p < end && *p == '.') {
                p++;
                for (int scale = 100; p < end && *p >= '0' && *p <= '9'; scale /= 10)
                    q += (*p++ - '0') * scale;
            }
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            return p == end && q <= 1000 ? q : -1;
        }
        while (p < end && *p != ';')
            p++;
    }
    return 1000;
}

void compress_accept_parse(struct strview hdr, struct accept_enc *ae)
{
    static const char *const names[CODING_COUNT] = { "br", "zstd", "gzip" };
    int star = -1;
    for (int i = 0; i < CODING_COUNT; i++)
        ae->q[i] = -1;
    ae->identity = -1;
    struct strview item;
    while (hdr.ptr && sv_list_next(&hdr, &item)) {
        const char *semi = memchr(item.ptr, ';', item.len);
        size_t len = semi ? (size_t)(semi - item.ptr) : item.len;
        struct strview coding = sv_trim((struct strview){ item.ptr, len });
        int q = semi ? accept_parse_q(semi, item.ptr + item.len) : 1000;
        if (q < 0)
            continue;
        if (SV_CASE_EQ(coding, "*"))
            star = q;
        else if (SV_CASE_EQ(coding, "identity"))
            ae->identity = q;
        else if (SV_CASE_EQ(coding, "x-gzip"))
            ae->q[CODING_GZIP] = q;
        for (int i = 0; i < CODING_COUNT; i++)
            if (sv_case_eq(coding, names[i], strlen(names[i])))
                ae->q[i] = q;
    }
    for (int i = 0; i < CODING_COUNT; i++)
        if (ae->q[i] < 0)
            ae->q[i] = star >= 0 ? star : 0;
    /* Unlisted identity is acceptable (unless `*;q=0` excludes it) but not preferred over a
     * coding the client listed, whatever that coding's q. */
    if (ae->identity < 0)
        ae->identity = star >= 0 ? (star == 0 ? 0 : 1) : 1;
}
