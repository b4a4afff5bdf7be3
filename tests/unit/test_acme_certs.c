/* test_acme_certs.c — unit tests for server/acme/certs.c: the TLS-ALPN-01 certificate
 * (RFC 8737 3), the CSR, and the checks an issued chain passes before it is installed. */
#include "acme/certs.h"
#include "test.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <time.h>

#define DAY (24 * 3600)

static void alpn_cert(void)
{
    static const char key_auth[] = "token.thumbprint";
    unsigned char md[SHA256_DIGEST_LENGTH], want[2 + SHA256_DIGEST_LENGTH];
    ASN1_OBJECT *oid = OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1);
    GENERAL_NAMES *san;
    X509_EXTENSION *ext;
    ASN1_OCTET_STRING *val;
    X509 *cert = NULL;
    EVP_PKEY *key = NULL;
    int i;

    is_int(certs_alpn_cert("a.acme.test", key_auth, &cert, &key), 0, "made");
    if (!cert)
        return;
    ok(X509_check_private_key(cert, key) == 1, "its key");
    i = X509_get_ext_by_OBJ(cert, oid, -1);
    ok(i >= 0, "has id-pe-acmeIdentifier");
    ext = X509_get_ext(cert, i);
    ok(ext && X509_EXTENSION_get_critical(ext), "critical");
    /* the extension's value is the DER of an OCTET STRING of SHA-256(key authorization) */
    SHA256((const unsigned char *)key_auth, strlen(key_auth), md);
    want[0] = 0x04;
    want[1] = SHA256_DIGEST_LENGTH;
    memcpy(want + 2, md, sizeof(md));
    val = ext ? X509_EXTENSION_get_data(ext) : NULL;
    ok(val && ASN1_STRING_length(val) == (int)sizeof(want)
           && memcmp(ASN1_STRING_get0_data(val), want, sizeof(want)) == 0,
       "value: OCTET STRING (32 bytes) of SHA-256 of the key authorization");
    ok(X509_get_ext_by_OBJ(cert, oid, i) < 0, "only one");
    san = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    ok(san && sk_GENERAL_NAME_num(san) == 1, "one subjectAltName");
    ok(san && X509_check_host(cert, "a.acme.test", 0, 0, NULL) == 1
           && X509_check_host(cert, "b.acme.test", 0, 0, NULL) != 1,
       "the dNSName is the name validated");
    GENERAL_NAMES_free(san);
    ASN1_OBJECT_free(oid);
    X509_free(cert);
    EVP_PKEY_free(key);
}

static void csr(void)
{
    static const char *const names[] = {"a.acme.test", "b.acme.test"};
    EVP_PKEY *key = certs_key_new();
    unsigned char *der = NULL;
    const unsigned char *p;
    X509_REQ *req;
    STACK_OF(X509_EXTENSION) *exts;
    GENERAL_NAMES *san = NULL;
    int len = certs_csr_der(key, names, 2, &der);

    ok(len > 0, "CSR made");
    p = der;
    req = d2i_X509_REQ(NULL, &p, len);
    ok(req && X509_REQ_verify(req, key) == 1, "signed by the order's key");
    exts = req ? X509_REQ_get_extensions(req) : NULL;
    if (exts)
        san = X509V3_get_d2i(exts, NID_subject_alt_name, NULL, NULL);
    ok(san && sk_GENERAL_NAME_num(san) == 2, "both names in subjectAltName");
    GENERAL_NAMES_free(san);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    X509_REQ_free(req);
    OPENSSL_free(der);
    EVP_PKEY_free(key);
}

/* A certificate for pub (SAN names) signed by issuer_key, valid [now + from, now + to]. */
static X509 *make_cert(EVP_PKEY *pub, const char *cn, const char *san, X509 *issuer,
                       EVP_PKEY *issuer_key, long from, long to, bool ca)
{
    X509 *x = X509_new();
    X509V3_CTX v3;
    X509_EXTENSION *e;

    X509_set_version(x, X509_VERSION_3);
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)rand());
    X509_gmtime_adj(X509_getm_notBefore(x), from);
    X509_gmtime_adj(X509_getm_notAfter(x), to);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(issuer ? issuer : x));
    X509_set_pubkey(x, pub);
    X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
    e = X509V3_EXT_conf_nid(NULL, &v3, ca ? NID_basic_constraints : NID_subject_alt_name,
                            ca ? "critical,CA:TRUE" : san);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    X509_sign(x, issuer_key, EVP_sha256());
    return x;
}

static STACK_OF(X509) *chain_of(X509 *a, X509 *b)
{
    STACK_OF(X509) *s = sk_X509_new_null();

    X509_up_ref(a);
    sk_X509_push(s, a);
    if (b) {
        X509_up_ref(b);
        sk_X509_push(s, b);
    }
    return s;
}

static bool check(STACK_OF(X509) *chain, EVP_PKEY *key, const char *const *names, size_t n,
                  const char *want_why)
{
    char why[160] = "";
    int rc = certs_chain_check(chain, key, names, n, time(NULL), why, sizeof(why));

    sk_X509_pop_free(chain, X509_free);
    if (!want_why)
        return rc == 0;
    if (rc == 0 || !strstr(why, want_why))
        printf("# rc %d why \"%s\", want \"%s\"\n", rc, why, want_why);
    return rc < 0 && strstr(why, want_why);
}

static void chain_checks(void)
{
    static const char *const names[] = {"a.acme.test", "b.acme.test"};
    static const char *const other[] = {"c.acme.test"};
    static const char *const wild[] = {"x.acme.test"};
    EVP_PKEY *ca_key = certs_key_new(), *key = certs_key_new(), *key2 = certs_key_new();
    X509 *ca = make_cert(ca_key, "test CA", NULL, NULL, ca_key, -DAY, 90 * DAY, true);
    X509 *leaf = make_cert(key, "a.acme.test", "DNS:a.acme.test,DNS:b.acme.test", ca, ca_key,
                           -DAY, 90 * DAY, false);
    X509 *stale = make_cert(key, "a.acme.test", "DNS:a.acme.test", ca, ca_key, -9 * DAY,
                            -DAY, false);
    X509 *wildcard = make_cert(key, "w", "DNS:*.acme.test", ca, ca_key, -DAY, DAY, false);
    X509 *stranger = make_cert(key2, "test CA", NULL, NULL, key2, -DAY, DAY, true);

    ok(check(chain_of(leaf, ca), key, names, 2, NULL), "leaf + issuer, key, names: good");
    ok(check(chain_of(leaf, NULL), key, names, 2, "no issuer"), "a leaf alone is truncated");
    ok(check(chain_of(leaf, ca), key2, names, 2, "not for the order's key"), "another key");
    ok(check(chain_of(leaf, ca), key, other, 1, "does not cover c.acme.test"), "another name");
    ok(check(chain_of(wildcard, ca), key, wild, 1, "does not cover"),
       "a wildcard does not stand for an exact name");
    ok(check(chain_of(stale, ca), key, names, 1, "not valid now"), "expired");
    ok(check(chain_of(leaf, stranger), key, names, 2, "not issued by the next"),
       "an unrelated second certificate");
    X509_free(ca), X509_free(leaf), X509_free(stale), X509_free(wildcard), X509_free(stranger);
    EVP_PKEY_free(ca_key), EVP_PKEY_free(key), EVP_PKEY_free(key2);
}

static void chain_parse(void)
{
    EVP_PKEY *key = certs_key_new();
    X509 *a = make_cert(key, "a", NULL, NULL, key, 0, DAY, true);
    STACK_OF(X509) *two = chain_of(a, a), *back;
    size_t len = 0;
    char *pem = certs_chain_pem(two, &len);

    ok(pem && len > 0, "chain to PEM");
    back = certs_chain_parse(pem, len);
    ok(back && sk_X509_num(back) == 2, "and back: two certificates");
    sk_X509_pop_free(back, X509_free);
    /* a download cut short: the second certificate has no end line */
    ok(certs_chain_parse(pem, len - 40) == NULL, "a truncated chain is refused");
    ok(certs_chain_parse(pem, len / 2 + 30) == NULL, "cut in the second certificate: refused");
    ok(certs_chain_parse("{\"type\":\"x\"}", 12) == NULL, "JSON is not a chain");
    ok(certs_chain_parse("", 0) == NULL, "nothing is not a chain");
    pem[100] = pem[100] == 'A' ? 'B' : 'A';
    back = certs_chain_parse(pem, len);
    ok(back == NULL || sk_X509_num(back) == 2, "a flipped byte: refused or still two");
    sk_X509_pop_free(back, X509_free);
    ok(ERR_peek_error() == 0, "no OpenSSL error left queued");
    free(pem);
    sk_X509_pop_free(two, X509_free);
    X509_free(a);
    EVP_PKEY_free(key);
}

/* RFC 9773 4.1's example: keyIdentifier 69:88:5B:...:D4 and serial 00:87:65:43:21. */
static void ari_id(void)
{
    static const unsigned char keyid[] = {0x69, 0x88, 0x5b, 0x6b, 0x87, 0x46, 0x40,
                                          0x41, 0xe1, 0xb3, 0x7b, 0x84, 0x7b, 0xa0,
                                          0xae, 0x2c, 0xde, 0x01, 0xc8, 0xd4};
    EVP_PKEY *key = certs_key_new();
    X509 *x = make_cert(key, "ari", "DNS:ari.acme.test", NULL, key, 0, DAY, false), *y;
    AUTHORITY_KEYID *akid = AUTHORITY_KEYID_new();
    BIGNUM *serial = NULL;
    unsigned char *der = NULL;
    const unsigned char *p;
    char id[128];
    int len;

    akid->keyid = ASN1_OCTET_STRING_new();
    ASN1_OCTET_STRING_set(akid->keyid, keyid, sizeof(keyid));
    X509_add1_ext_i2d(x, NID_authority_key_identifier, akid, 0, X509V3_ADD_DEFAULT);
    BN_hex2bn(&serial, "87654321");
    BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x));
    X509_sign(x, key, EVP_sha256());
    /* through DER, as a certificate read from the store is */
    len = i2d_X509(x, &der);
    p = der;
    y = d2i_X509(NULL, &p, len);
    is_int(certs_ari_id(y, id, sizeof(id)), 0, "ARI identifier");
    is_str(id, "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE",
           "RFC 9773's example (a 0x00 before a serial whose high bit is set)");
    is_int(certs_ari_id(y, id, 30), -1, "too small a buffer: -1");
    BN_set_word(serial, 0x12345);
    BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(y));
    is_int(certs_ari_id(y, id, sizeof(id)), 0, "a serial without the high bit");
    ok(strstr(id, ".ASNF") != NULL, "no padding byte then (01 23 45: \"ASNF\")");
    X509_free(x);
    x = make_cert(key, "n", "DNS:n.acme.test", NULL, key, 0, DAY, false);
    is_int(certs_ari_id(x, id, sizeof(id)), -1, "no Authority Key Identifier: -1");
    OPENSSL_free(der);
    BN_free(serial);
    AUTHORITY_KEYID_free(akid);
    X509_free(x);
    X509_free(y);
    EVP_PKEY_free(key);
}

int main(void)
{
    ari_id();
    alpn_cert();
    csr();
    chain_checks();
    chain_parse();
    return done_testing();
}
