/* test_acme_jws.c — unit tests for server/acme/jws.c: base64url (RFC 4648 10), the JWK
 * thumbprint (RFC 7638 3.1's example), ES256 as raw r||s, the flattened JWS and key
 * authorizations. */
#include "acme/certs.h"
#include "acme/acme.h"
#include "acme/jws.h"
#include "test.h"

#include <json-c/json.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <stdlib.h>

/* RFC 7638 3.1: the RSA key whose thumbprint the RFC computes. */
static const char RFC7638_N[] =
    "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_B"
    "JECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW"
    "2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQF"
    "h6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";
static const char RFC7638_THUMBPRINT[] = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs";

/* base64url (no padding) back to bytes: the test's own decoder, so that the encoder is not
 * checked against itself. */
static size_t b64url_decode(const char *in, unsigned char *out, size_t cap)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned acc = 0, bits = 0;
    size_t n = 0;

    for (; *in; in++) {
        const char *p = strchr(alphabet, *in);
        if (!p)
            return (size_t)-1;
        acc = acc << 6 | (unsigned)(p - alphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n == cap)
                return (size_t)-1;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    return n;
}

static void base64url(void)
{
    static const struct { const char *in, *out; } v[] = {
        {"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"foob", "Zm9vYg"},
        {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}, {"\xfb\xff", "-_8"}, {"\xff\xfe", "__4"},
    };
    char out[16];
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        ssize_t n = b64url_encode(v[i].in, strlen(v[i].in), out, sizeof(out));
        is_str(out, v[i].out, v[i].out);
        is_int(n, strlen(v[i].out), "its length");
        is_int(b64url_len(strlen(v[i].in)), strlen(v[i].out), "b64url_len");
    }
    is_int(b64url_encode("foobar", 6, out, 8), -1, "no room for the NUL: -1");
    is_int(b64url_encode("foobar", 6, out, 9), 8, "exactly enough room");
}

static EVP_PKEY *rsa_from_jwk(const char *n64, const char *e64)
{
    unsigned char n[512], e[8];
    size_t nl = b64url_decode(n64, n, sizeof(n)), el = b64url_decode(e64, e, sizeof(e));
    BIGNUM *bn = BN_bin2bn(n, (int)nl, NULL), *be = BN_bin2bn(e, (int)el, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    EVP_PKEY *key = NULL;

    if (bld && bn && be && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn)
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be)
        && (params = OSSL_PARAM_BLD_to_param(bld)) != NULL && ctx
        && EVP_PKEY_fromdata_init(ctx) == 1)
        EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    EVP_PKEY_CTX_free(ctx);
    BN_free(bn);
    BN_free(be);
    return key;
}

static void thumbprint_rfc7638(void)
{
    EVP_PKEY *key = rsa_from_jwk(RFC7638_N, "AQAB");
    char jwk[1024], tp[JWS_THUMBPRINT_LEN + 1];

    ok(key != NULL, "the RFC 7638 example key");
    if (!key)
        return;
    ok(jws_jwk(key, jwk, sizeof(jwk)) > 0, "its JWK");
    ok(strncmp(jwk, "{\"e\":\"AQAB\",\"kty\":\"RSA\",\"n\":\"0vx7agoebGcQSuuPiLJX", 47) == 0,
       "canonical: required members in lexicographic order, no white space");
    is_int(jws_thumbprint(key, tp), 0, "thumbprint");
    is_str(tp, RFC7638_THUMBPRINT, "RFC 7638 3.1's thumbprint");
    is_int(jws_jwk(key, jwk, 64), -1, "a buffer too small: -1");
    EVP_PKEY_free(key);
}

/* RFC 7517 A.1: an EC P-256 public key, and so the JWK this must produce for it. */
static const char RFC7517_X[] = "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4";
static const char RFC7517_Y[] = "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM";

static EVP_PKEY *ec_from_xy(const char *x64, const char *y64)
{
    unsigned char pub[65];
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY *key = NULL;
    char group[] = "P-256";
    OSSL_PARAM params[3];

    pub[0] = 0x04; /* uncompressed point */
    if (b64url_decode(x64, pub + 1, 32) != 32 || b64url_decode(y64, pub + 33, 32) != 32)
        return NULL;
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub));
    params[2] = OSSL_PARAM_construct_end();
    if (ctx && EVP_PKEY_fromdata_init(ctx) == 1)
        EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params);
    EVP_PKEY_CTX_free(ctx);
    return key;
}

static void jwk_ec(void)
{
    EVP_PKEY *key = ec_from_xy(RFC7517_X, RFC7517_Y);
    char jwk[256], want[256];

    ok(key != NULL, "the RFC 7517 A.1 key");
    if (!key)
        return;
    snprintf(want, sizeof(want), "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}",
             RFC7517_X, RFC7517_Y);
    ok(jws_jwk(key, jwk, sizeof(jwk)) > 0, "its JWK");
    is_str(jwk, want, "EC JWK: crv, kty, x, y; coordinates padded to 32 bytes");
    EVP_PKEY_free(key);
}

/* Verify a raw r||s ES256 signature the way a CA does. */
static bool es256_verify(EVP_PKEY *key, const void *data, size_t len, const unsigned char *sig)
{
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *der = NULL;
    int derlen;
    bool ok = false;

    if (es && r && s && ECDSA_SIG_set0(es, r, s) == 1) {
        r = s = NULL;
        derlen = i2d_ECDSA_SIG(es, &der);
        ok = derlen > 0 && md && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1
             && EVP_DigestVerify(md, der, (size_t)derlen, data, len) == 1;
    }
    OPENSSL_free(der);
    EVP_MD_CTX_free(md);
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    return ok;
}

static void es256(void)
{
    EVP_PKEY *key = certs_key_new();
    unsigned char sig[JWS_ES256_SIG_LEN], sig2[JWS_ES256_SIG_LEN];
    int i, good = 0;

    ok(key != NULL, "a P-256 key");
    /* r or s with leading zero bytes must still fill 32 bytes: many signatures meet one */
    for (i = 0; i < 64; i++)
        good += jws_es256_sign(key, "payload", 7, sig) == 0 && es256_verify(key, "payload", 7, sig);
    is_int(good, 64, "64 signatures, each 64 bytes r||s, each verifies");
    jws_es256_sign(key, "payload", 7, sig2);
    ok(!es256_verify(key, "payloaD", 7, sig2), "not for other data");
    EVP_PKEY_free(key);
}

/* A member of the decoded protected header. */
static json_object *protected_header(json_object *jws)
{
    unsigned char buf[2048];
    json_object *p;
    size_t n;

    if (!json_object_object_get_ex(jws, "protected", &p))
        return NULL;
    n = b64url_decode(json_object_get_string(p), buf, sizeof(buf) - 1);
    if (n == (size_t)-1)
        return NULL;
    buf[n] = '\0';
    return json_tokener_parse((char *)buf);
}

static const char *member(json_object *o, const char *k)
{
    json_object *v;

    return o && json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

static void jws(void)
{
    EVP_PKEY *key = certs_key_new();
    char *a = jws_build(key, NULL, "n0nce", "https://ca.test/new-acct", "{\"x\":1}");
    char *b = jws_build(key, "https://ca.test/acct/\"7\"", "n2", "https://ca.test/o", NULL);
    json_object *ja = a ? json_tokener_parse(a) : NULL, *jb = b ? json_tokener_parse(b) : NULL;
    json_object *ha = protected_header(ja), *hb = protected_header(jb), *jwk;
    unsigned char sig[128];
    char signing[4096];

    ok(ja && jb && ha && hb, "two JWS, JSON objects with a JSON protected header");
    is_str(member(ha, "alg"), "ES256", "alg");
    is_str(member(ha, "nonce"), "n0nce", "nonce");
    is_str(member(ha, "url"), "https://ca.test/new-acct", "url");
    ok(member(ha, "kid") == NULL && json_object_object_get_ex(ha, "jwk", &jwk)
           && strcmp(member(jwk, "kty"), "EC") == 0,
       "newAccount: the JWK, no kid");
    is_str(member(ja, "payload"), "eyJ4IjoxfQ", "payload: base64url of the JSON");
    snprintf(signing, sizeof(signing), "%s.%s", member(ja, "protected"), member(ja, "payload"));
    ok(b64url_decode(member(ja, "signature"), sig, sizeof(sig)) == JWS_ES256_SIG_LEN
           && es256_verify(key, signing, strlen(signing), sig),
       "the signature is r||s over protected.payload");
    is_str(member(hb, "kid"), "https://ca.test/acct/\"7\"", "kid, escaped by the library");
    ok(!json_object_object_get_ex(hb, "jwk", &jwk), "with a kid, no JWK");
    is_str(member(jb, "payload"), "", "POST-as-GET: the empty payload");
    json_object_put(ha), json_object_put(hb), json_object_put(ja), json_object_put(jb);
    free(a), free(b);
    EVP_PKEY_free(key);
}

static void key_authorization(void)
{
    char out[ACME_KEYAUTH_MAX + 1];

    static const char token[] = "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA";

    is_int(jws_key_authorization(token, RFC7638_THUMBPRINT, out, sizeof(out)), 87, "length");
    is_str(out,
           "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA."
           "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
           "token.thumbprint (RFC 8555 8.1)");
    is_int(jws_key_authorization("tok", "tp", out, 6), -1, "too small a buffer: -1");
}

int main(void)
{
    base64url();
    thumbprint_rfc7638();
    jwk_ec();
    es256();
    jws();
    key_authorization();
    return done_testing();
}
