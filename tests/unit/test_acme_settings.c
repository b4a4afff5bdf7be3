/* test_acme_settings.c — unit tests for server/acme/acme.c's settings check and the HTTP-01
 * table's lookups when nothing is published. */
#include "acme/acme.h"
#include "test.h"

static struct acme_settings good(void)
{
    struct acme_settings s = {
        .directory_url = "https://acme.example/dir",
        .state_dir = "/var/lib/lfhttpd/acme",
        .email = "ops@example.org",
        .agree_tos = true,
        .names = {"example.org", "www.example.org"},
        .n_names = 2,
    };
    return s;
}

/* The reason for s, checked to contain `part` (NULL: accepted). */
static void refused(struct acme_settings s, const char *part, const char *what)
{
    const char *why = acme_settings_check(&s);

    if (!part) {
        ok(why == NULL, "accepted: %s", what);
    } else {
        ok(why && strstr(why, part), "refused: %s", what);
        if (why && !strstr(why, part))
            printf("# reason \"%s\", want \"%s\"\n", why, part);
    }
}

static void names(void)
{
    static const struct { const char *name, *part; } v[] = {
        {"example.org", NULL}, {"a-b.example.org", NULL}, {"xn--bcher-kva.example", NULL},
        {"Example.ORG", NULL}, {"*.example.org", "wildcard"}, {"a.*.example.org", "wildcard"},
        {"192.0.2.1", "IP address"}, {"2001:db8::1", "IP address"}, {"::1", "IP address"},
        {"localhost", "two labels"}, {"-a.example.org", "'-'"}, {"a-.example.org", "'-'"},
        {"a..example.org", "empty label"}, {"example.org.", "ends with"},
        {"exa mple.org", "only letters"}, {"exam_ple.org", "only letters"}, {"", "1 to 253"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.org", "63"},
    };
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        struct acme_settings s = good();
        s.names[0] = "first.example.net";
        s.names[1] = v[i].name;
        refused(s, v[i].part, v[i].name);
    }
}

static void others(void)
{
    struct acme_settings s;

    refused(good(), NULL, "the defaults");
    s = good(), s.agree_tos = false;
    refused(s, "terms of service", "no explicit agreement");
    s = good(), s.directory_url = "http://acme.example/dir";
    refused(s, "https", "an http directory");
    s.test_ca = true;
    refused(s, NULL, "an http directory of a test CA");
    s = good(), s.directory_url = NULL;
    refused(s, "https", "no directory");
    s = good(), s.state_dir = "";
    refused(s, "state directory", "no state directory");
    s = good(), s.email = "not an address";
    refused(s, "email", "a contact that is not an address");
    s = good(), s.email = NULL;
    refused(s, NULL, "no contact");
    s = good(), s.n_names = 0;
    refused(s, "names", "no name");
    s = good(), s.n_names = ACME_MAX_NAMES + 1;
    refused(s, "names", "too many names");
    s = good(), s.names[1] = "EXAMPLE.org";
    refused(s, "twice", "a name twice (case-insensitive)");
    s = good(), s.challenge = (enum acme_challenge)7;
    refused(s, "challenge", "an unknown challenge");
    s = good(), s.retry_min_s = 100, s.retry_max_s = 10;
    refused(s, "retry", "retry minimum above maximum");
}

static void lookup_empty(void)
{
    char out[ACME_KEYAUTH_MAX + 1];

    is_int(acme_http01_lookup("abc", 3, out, sizeof(out)), -1, "nothing published: -1");
    is_int(acme_http01_lookup("", 0, out, sizeof(out)), -1, "empty token: -1");
    is_int(acme_http01_lookup(out, ACME_TOKEN_MAX + 1, out, sizeof(out)), -1, "too long: -1");
}

int main(void)
{
    names();
    others();
    lookup_empty();
    return done_testing();
}
