/* jws.c — base64url, JWK, thumbprints, ES256 and flattened JWS (see jws.h). */
#include "acme/jws.h"

#include <json-c/json.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

/* P-256 coordinates and scalars are 32 bytes. */
#define P256_BYTES 32
/* Large enough for an RSA modulus of 8192 bits, the largest a JWK we read may carry. */
#define JWK_BN_MAX 1024

static const char B64URL[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t b64url_len(size_t len)
{
    return B64URL_LEN(len);
}

ssize_t b64url_encode(const void *in, size_t len, char *out, size_t cap)
{
    const uint8_t *p = in;
    size_t n = b64url_len(len), o = 0, i;

    if (n + 1 > cap)
        return -1;
    for (i = 0; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = B64URL[v >> 18 & 63];
        out[o++] = B64URL[v >> 12 & 63];
        out[o++] = B64URL[v >> 6 & 63];
        out[o++] = B64URL[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        out[o++] = B64URL[v >> 18 & 63];
        out[o++] = B64URL[v >> 12 & 63];
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        out[o++] = B64URL[v >> 18 & 63];
        out[o++] = B64URL[v >> 12 & 63];
        out[o++] = B64URL[v >> 6 & 63];
    }
    out[o] = '\0';
    return (ssize_t)o;
}

/* A big number parameter of key, big-endian, left-padded to `width` bytes (0: its own size),
 * base64url into out. */
static int bn_param_b64(EVP_PKEY *key, const char *param, int width, char *out, size_t cap)
{
    uint8_t bin[JWK_BN_MAX];
    BIGNUM *bn = NULL;
    int n, rc = -1;

    if (!EVP_PKEY_get_bn_param(key, param, &bn))
        return -1;
    n = width ? width : BN_num_bytes(bn);
    if (n > 0 && n <= (int)sizeof(bin) && BN_bn2binpad(bn, bin, n) == n
        && b64url_encode(bin, (size_t)n, out, cap) >= 0)
        rc = 0;
    BN_free(bn);
    return rc;
}

ssize_t jws_jwk(EVP_PKEY *key, char *out, size_t cap)
{
    char a[B64URL_LEN(JWK_BN_MAX) + 1], b[B64URL_LEN(JWK_BN_MAX) + 1];
    int n;

    if (EVP_PKEY_is_a(key, "EC")) {
        char curve[16];
        if (!EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, curve,
                                            sizeof(curve), NULL)
            || strcmp(curve, "prime256v1") != 0
            || bn_param_b64(key, OSSL_PKEY_PARAM_EC_PUB_X, P256_BYTES, a, sizeof(a)) < 0
            || bn_param_b64(key, OSSL_PKEY_PARAM_EC_PUB_Y, P256_BYTES, b, sizeof(b)) < 0)
            return -1;
        n = snprintf(out, cap, "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}", a,
                     b);
    } else if (EVP_PKEY_is_a(key, "RSA")) {
        if (bn_param_b64(key, OSSL_PKEY_PARAM_RSA_E, 0, a, sizeof(a)) < 0
            || bn_param_b64(key, OSSL_PKEY_PARAM_RSA_N, 0, b, sizeof(b)) < 0)
            return -1;
        n = snprintf(out, cap, "{\"e\":\"%s\",\"kty\":\"RSA\",\"n\":\"%s\"}", a, b);
    } else {
        return -1;
    }
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

int jws_thumbprint(EVP_PKEY *key, char out[JWS_THUMBPRINT_LEN + 1])
{
    char jwk[2 * B64URL_LEN(JWK_BN_MAX) + 64];
    uint8_t md[SHA256_DIGEST_LENGTH];
    ssize_t n = jws_jwk(key, jwk, sizeof(jwk));

    if (n < 0 || !SHA256((const uint8_t *)jwk, (size_t)n, md))
        return -1;
    return b64url_encode(md, sizeof(md), out, JWS_THUMBPRINT_LEN + 1) < 0 ? -1 : 0;
}

int jws_es256_sign(EVP_PKEY *key, const void *data, size_t len, uint8_t sig[JWS_ES256_SIG_LEN])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    uint8_t der[128];
    size_t derlen = sizeof(der);
    const uint8_t *p = der;
    ECDSA_SIG *es = NULL;
    int rc = -1;

    if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1
        || EVP_DigestSign(md, der, &derlen, data, len) != 1)
        goto out;
    /* JWS wants the two integers side by side, each padded to the curve's size (RFC 7518
     * 3.4); OpenSSL produces an ASN.1 SEQUENCE of them. */
    es = d2i_ECDSA_SIG(NULL, &p, (long)derlen);
    if (es && BN_bn2binpad(ECDSA_SIG_get0_r(es), sig, P256_BYTES) == P256_BYTES
        && BN_bn2binpad(ECDSA_SIG_get0_s(es), sig + P256_BYTES, P256_BYTES) == P256_BYTES)
        rc = 0;
out:
    ECDSA_SIG_free(es);
    EVP_MD_CTX_free(md);
    return rc;
}

/* base64url of a string, malloc'd. */
static char *b64url_dup(const char *s)
{
    size_t len = strlen(s), cap = b64url_len(len) + 1;
    char *out = malloc(cap);

    if (out && b64url_encode(s, len, out, cap) < 0) {
        free(out);
        out = NULL;
    }
    return out;
}

/* The protected header, serialized. */
static char *jws_protected(EVP_PKEY *key, const char *kid, const char *nonce, const char *url)
{
    char jwk[2 * B64URL_LEN(JWK_BN_MAX) + 64];
    json_object *h = json_object_new_object();
    char *out = NULL;

    if (!h)
        return NULL;
    json_object_object_add(h, "alg", json_object_new_string("ES256"));
    if (kid) {
        json_object_object_add(h, "kid", json_object_new_string(kid));
    } else {
        if (jws_jwk(key, jwk, sizeof(jwk)) < 0)
            goto out;
        json_object_object_add(h, "jwk", json_tokener_parse(jwk));
    }
    json_object_object_add(h, "nonce", json_object_new_string(nonce));
    json_object_object_add(h, "url", json_object_new_string(url));
    out = b64url_dup(json_object_to_json_string_ext(h, JSON_C_TO_STRING_PLAIN));
out:
    json_object_put(h);
    return out;
}

char *jws_build(EVP_PKEY *key, const char *kid, const char *nonce, const char *url,
                const char *payload)
{
    char *prot = jws_protected(key, kid, nonce, url);
    char *pay = b64url_dup(payload ? payload : "");
    char *signing = NULL, *out = NULL;
    char sig64[B64URL_LEN(JWS_ES256_SIG_LEN) + 1];
    uint8_t sig[JWS_ES256_SIG_LEN];
    json_object *j = NULL;

    if (!prot || !pay || asprintf(&signing, "%s.%s", prot, pay) < 0) {
        signing = NULL;
        goto out;
    }
    if (jws_es256_sign(key, signing, strlen(signing), sig) < 0
        || b64url_encode(sig, sizeof(sig), sig64, sizeof(sig64)) < 0)
        goto out;
    j = json_object_new_object();
    if (!j)
        goto out;
    json_object_object_add(j, "protected", json_object_new_string(prot));
    json_object_object_add(j, "payload", json_object_new_string(pay));
    json_object_object_add(j, "signature", json_object_new_string(sig64));
    out = strdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
out:
    json_object_put(j);
    free(signing);
    free(pay);
    free(prot);
    return out;
}

ssize_t jws_key_authorization(const char *token, const char *thumbprint, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s.%s", token, thumbprint);

    return n < 0 || (size_t)n >= cap ? -1 : n;
}
