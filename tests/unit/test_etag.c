/* test_etag.c — unit tests for handlers/static/conditional.c: entity-tag lists of If-Match
 * (strong comparison) and If-None-Match (weak), RFC 9110 8.8.3.2 and 13.1. */
#include "static/conditional.h"
#include "test.h"

#include <string.h>

static bool match(const char *list, const char *etag, bool weak)
{
    return etag_list_match((struct strview){ list, strlen(list) }, etag, strlen(etag), weak);
}

int main(void)
{
    const char *tag = "\"abc-123\"";
    ok(match("\"abc-123\"", tag, false), "the same tag matches (strong)");
    ok(match("\"abc-123\"", tag, true), "the same tag matches (weak)");
    ok(match("\"x\", \"abc-123\"", tag, false), "a tag later in the list");
    ok(match("\"x\",\"abc-123\" , \"y\"", tag, false), "spaces around commas");
    ok(!match("\"abc-1234\"", tag, false), "a longer tag does not");
    ok(!match("\"abc-12\"", tag, true), "a shorter tag does not");
    ok(!match("abc-123", tag, true), "the tag without its quotes does not");
    ok(!match("", tag, true), "an empty list matches nothing");
    ok(match("*", tag, false), "* matches any representation (strong)");
    ok(match("*", tag, true), "* matches any representation (weak)");
    /* W/: weak comparison ignores it; strong comparison never matches a weak tag. */
    ok(match("W/\"abc-123\"", tag, true), "W/ tag, weak comparison: matches");
    ok(!match("W/\"abc-123\"", tag, false), "W/ tag, strong comparison: does not");
    ok(match("W/\"x\", \"abc-123\"", tag, false), "a strong tag after a weak one (strong)");
    ok(!match("w/\"abc-123\"", tag, true), "w/ (lower case) is not the weak prefix");
    return done_testing();
}
