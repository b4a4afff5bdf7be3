/* http_strict.c — request checks llhttp leaves to us; see http_strict.h. */
#include "http/http_strict.h"

#include <string.h>

#include "base/hex.h"

bool http_has_obs_fold(const char *data, size_t len)
{
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *lf = memchr(p, '\n', (size_t)(end - p));
        if (!lf || lf + 1 >= end)
            return false;
        if (lf[1] == ' ' || lf[1] == '\t')
            return true;
        p = lf + 1;
    }
    return false;
}

bool http_token_valid(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!http_is_tchar((unsigned char)s[i]))
            return false;
    return true;
}

bool http_field_value_valid(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* unreserved / sub-delims (RFC 3986 2.2, 2.3): the bytes of a reg-name besides pct-encoding.
 * A table: this runs for every byte of every Host header. */
#define RN_ALNUM(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || ((c) >= '0' && (c) <= '9'))
#define RN(c) (RN_ALNUM(c) || (c) == '-' || (c) == '.' || (c) == '_' || (c) == '~' || (c) == '!' || \
               (c) == '$' || (c) == '&' || (c) == '\'' || (c) == '(' || (c) == ')' || (c) == '*' || \
               (c) == '+' || (c) == ',' || (c) == ';' || (c) == '=')
#define RN4(c) RN(c), RN((c) + 1), RN((c) + 2), RN((c) + 3)
#define RN16(c) RN4(c), RN4((c) + 4), RN4((c) + 8), RN4((c) + 12)
#define RN64(c) RN16(c), RN16((c) + 16), RN16((c) + 32), RN16((c) + 48)
static const bool reg_name_table[256] = { RN64(0), RN64(64) }; /* >= 128: false */

static bool is_reg_name_char(unsigned char c)
{
    return reg_name_table[c];
}

bool http_host_valid(const char *h, size_t len)
{
    size_t i = 0;
    if (len > 0 && h[0] == '[') {
        /* IP-literal: hex digits, ':' and '.' (embedded IPv4) up to the closing bracket.
         * IPvFuture and zone identifiers are not accepted. */
        i = 1;
        while (i < len && (hex_is_digit((unsigned char)h[i]) || h[i] == ':' || h[i] == '.'))
            i++;
        if (i == 1 || i >= len || h[i] != ']')
            return false;
        i++;
    } else {
        while (i < len) {
            while (i < len && is_reg_name_char((unsigned char)h[i]))
                i++; /* the common case: a run of plain reg-name bytes */
            if (i == len)
                break;
            unsigned char c = (unsigned char)h[i];
            if (c == '%') {
                if (i + 2 >= len || hex_pair(h + i + 1) < 0)
                    return false;
                i += 3;
            } else if (is_reg_name_char(c)) {
                i++;
            } else {
                break;
            }
        }
    }
    if (i == len)
        return true;
    if (h[i] != ':')
        return false;
    for (i++; i < len; i++)
        if (!is_digit((unsigned char)h[i]))
            return false;
    return true;
}

int http_version_error_status(const char *data, size_t len)
{
    const char *cr = memchr(data, '\r', len);
    const char *lf = memchr(data, '\n', len);
    const char *eol = cr && (!lf || cr < lf) ? cr : lf;
    if (!eol)
        eol = data + len; /* the line is not complete: judge what there is */
    size_t n = (size_t)(eol - data);
    /* " HTTP/" DIGIT "." DIGIT at the very end of the line */
    if (n < 9 || memcmp(eol - 9, " HTTP/", 6) != 0)
        return 400;
    const char *v = eol - 3;
    if (!is_digit((unsigned char)v[0]) || v[1] != '.' || !is_digit((unsigned char)v[2]))
        return 400;
    if (v[0] == '1' && (v[2] == '0' || v[2] == '1'))
        return 400; /* a supported version: something else on the line was wrong */
    return 505;
}
