/* test_json.c — unit tests for server/base/json.c: JSON string escaping, whole or shortened. */
#include "base/json.h"
#include "test.h"

#include <string.h>

#define S(lit) (lit), sizeof(lit) - 1

static char out[256];

/* json_escape_script of `in` into out[0..cap): what it wrote, or "(no room)". */
static const char *scr(const char *in, size_t len, size_t cap)
{
    size_t pos = 0;
    memset(out, 'x', sizeof(out));
    if (!json_escape_script(out, cap, &pos, in, len))
        return pos == 0 ? "(no room)" : "(moved)";
    out[pos] = '\0';
    return out;
}

/* json_escape of `in` into out[0..cap): what it wrote; *took: the input bytes it took. */
static const char *esc(const char *in, size_t len, size_t cap, size_t *took)
{
    size_t pos = 0;
    memset(out, 'x', sizeof(out));
    *took = json_escape(out, cap, &pos, in, len);
    out[pos] = '\0';
    return out;
}

int main(void)
{
    size_t took;
    is_str(esc(S("plain text 123"), 64, &took), "plain text 123", "printable ASCII as is");
    is_str(esc(S("a\"b\\c"), 64, &took), "a\\\"b\\\\c", "quote and backslash");
    is_str(esc(S("l1\nl2\r\tx"), 64, &took), "l1\\nl2\\r\\tx", "\\n \\r \\t short");
    is_str(esc(S("\x01\x1f\x7f"), 64, &took), "\\u0001\\u001f\\u007f", "controls and DEL");
    is_str(esc(S("\xc3\xa9\xff"), 64, &took), "\\u00c3\\u00a9\\u00ff",
           "bytes from 0x80: one \\u00XX each, whatever the encoding");
    is_str(esc(S("a\0b"), 64, &took), "a\\u0000b", "a NUL byte");
    ok(took == 3, "all taken");
    is_str(esc(S(""), 64, &took), "", "empty");
    is_str(esc(NULL, 0, 64, &took), "", "NULL, 0");

    /* shortened: never a partial escape, and what was taken is what was written */
    is_str(esc(S("abc\"def"), 4, &took), "abc", "an escape that does not fit is left out");
    ok(took == 3, "3 taken");
    is_str(esc(S("abc\"def"), 5, &took), "abc\\\"", "one that fits exactly is written");
    ok(took == 4, "4 taken");
    is_str(esc(S("\xff\xff"), 11, &took), "\\u00ff", "a \\u00XX needs 6 bytes");
    ok(took == 1, "1 taken");
    is_str(esc(S("abcdef\"g"), 3, &took), "abc", "a run of plain bytes cut by the room");
    ok(took == 3, "3 taken");
    is_str(esc(S("abc"), 0, &took), "", "no room at all");
    ok(took == 0, "0 taken");

    size_t pos = 3;
    memcpy(out, "pre", 3);
    ok(json_escape(out, 8, &pos, S("\"x")) == 2 && pos == 6 && !memcmp(out, "pre\\\"x", 6),
       "appends at *pos, within cap");

    /* json_escape_append: all or nothing, room for a NUL */
    pos = 0;
    ok(json_escape_append(out, 4, &pos, S("abc")) && pos == 3, "append: 3 bytes fit in 4");
    pos = 0;
    ok(!json_escape_append(out, 3, &pos, S("abc")) && pos == 0,
       "append: no room for the NUL, false and *pos unchanged");
    pos = 1;
    ok(!json_escape_append(out, 6, &pos, S("\x01")) && pos == 1, "append: an escape too long");
    pos = 0;
    ok(!json_escape_append(out, 0, &pos, S("a")) && pos == 0, "append: cap 0 holds nothing");
    ok(json_escape_append(out, 1, &pos, S("")) && pos == 0, "append: nothing always fits");

    /* json_escape_script: UTF-8 kept, what would end a <script> or a JS string escaped */
    is_str(scr(S("</script><!-- a&b>"), 128), "\\u003c/script\\u003e\\u003c!-- a\\u0026b\\u003e",
           "script: < > & as \\u00XX");
    is_str(scr(S("\"q\"\\\n\t\x01"), 128), "\\\"q\\\"\\\\\\n\\t\\u0001",
           "script: quotes, backslash and controls as json_escape");
    is_str(scr(S("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), 128),
           "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
           "script: valid UTF-8 of 2, 3 and 4 bytes kept");
    is_str(scr(S("a\xe2\x80\xa8" "b\xe2\x80\xa9" "c"), 128), "a\\u2028b\\u2029c",
           "script: U+2028 and U+2029 escaped");
    is_str(scr(S("\xff\xc0\x80\xed\xa0\x80\xe2\x82"), 128),
           "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd",
           "script: a stray byte, an overlong form, a surrogate, a cut sequence: U+FFFD a byte");
    is_str(scr(S("abc"), 3), "(no room)", "script: all or nothing, with room for a NUL");
    is_str(scr(S("abc"), 4), "abc", "script: exactly fits");
    return done_testing();
}
