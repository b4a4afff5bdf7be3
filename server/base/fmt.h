/* fmt.h — numbers without printf: response heads, log lines, dates and chunk sizes format a few
 * numbers per request, and snprintf costs more than the rest of their formatting. */
#ifndef LF_FMT_H
#define LF_FMT_H

#include <stddef.h>
#include <stdint.h>

/* The longest outputs: 18446744073709551615, ffffffffffffffff. */
#define FMT_U64_MAX 20
#define FMT_HEX_U64_MAX 16

/* Format a decimal number; returns the number of characters written (no NUL). */
size_t fmt_u64(char *out, uint64_t v);

/* The same in lowercase hex, without leading zeros ("0" for 0): a chunk-size line. */
size_t fmt_hex_u64(char *out, uint64_t v);

/* v as exactly two decimal digits (its last two): days, hours, the halves of a year. */
static inline void fmt_2digits(char *p, unsigned v)
{
    p[0] = (char)('0' + v / 10 % 10);
    p[1] = (char)('0' + v % 10);
}

#endif
