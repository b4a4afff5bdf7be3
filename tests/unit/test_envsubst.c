/* Unit tests for envsubst.c: ${NAME} and ${NAME:-default} in configuration values. */
#include <stdlib.h>

#include "conf/envsubst.h"
#include "test.h"

static char out[256], err[256];
static bool used;

static int sub(const char *in)
{
    err[0] = '\0';
    return env_subst(in, out, sizeof(out), &used, err, sizeof(err));
}

int main(void)
{
    setenv("LF_T_PORT", "8081", 1);
    setenv("LF_T_EMPTY", "", 1);
    unsetenv("LF_T_UNSET");

    ok(sub("127.0.0.1:${LF_T_PORT}") == 14 && !strcmp(out, "127.0.0.1:8081") && used,
       "a variable is substituted inside a value");
    ok(sub("${LF_T_UNSET:-/srv/www}") >= 0 && !strcmp(out, "/srv/www") && !used,
       "an unset variable takes its default, and no value came from the environment");
    ok(sub("${LF_T_EMPTY:-x}") >= 0 && !strcmp(out, "x"), "an empty variable takes its default");
    ok(sub("a${LF_T_EMPTY}b") >= 0 && !strcmp(out, "ab") && !used,
       "an empty variable without a default is empty, as in the shell");
    ok(sub("${LF_T_PORT:-9}${LF_T_PORT}") >= 0 && !strcmp(out, "80818081"), "two in one value");
    ok(sub("${LF_T_UNSET:-}") == 0 && !strcmp(out, ""), "an empty default");
    ok(sub("$remote_addr $ 5$") >= 0 && !strcmp(out, "$remote_addr $ 5$"),
       "a $ not followed by { is kept");
    ok(sub("$${LF_T_PORT}") >= 0 && !strcmp(out, "${LF_T_PORT}"), "$${ is a literal ${");
    ok(sub("no variables") == 12 && !strcmp(out, "no variables") && !used, "plain text");

    ok(sub("${LF_T_UNSET}") < 0 &&
           !strcmp(err, "environment variable LF_T_UNSET is not set (give a default: "
                        "${LF_T_UNSET:-VALUE})"),
       "an unset variable without a default is an error: %s", err);
    ok(sub("${LF_T_PORT") < 0 && strstr(err, "bad variable reference '${LF_T_PORT'"),
       "unterminated: %s", err);
    ok(sub("${LF_T_UNSET:-abc") < 0 && !strcmp(err, "unterminated '${LF_T_UNSET'"),
       "unterminated default: %s", err);
    ok(sub("${1X}") < 0 && strstr(err, "bad variable reference '${1X}'"), "a name starts with a "
       "letter or _: %s", err);
    ok(sub("${}") < 0 && strstr(err, "bad variable reference"), "an empty name: %s", err);
    ok(sub("${A-B}") < 0 && strstr(err, "bad variable reference '${A-B}'"),
       "only :- introduces a default: %s", err);

    char big[300];
    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    setenv("LF_T_BIG", big, 1);
    ok(sub("x${LF_T_BIG}") < 0 && strstr(err, "too long once ${LF_T_BIG}"),
       "a value that does not fit is refused, never cut: %s", err);
    char small[4];
    ok(env_subst("abcd", small, sizeof(small), &used, err, sizeof(err)) < 0, "plain text that "
       "does not fit");
    return done_testing();
}
