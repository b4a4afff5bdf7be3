/* certs.c — keys, CSRs, the TLS-ALPN-01 certificate and the issued chain's checks (certs.h). */
#include "acme/certs.h"

#include "acme/jws.h"

#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RFC 8737 6.1: id-pe-acmeIdentifier. */
#define ACME_IDENTIFIER_OID "1.3.6.1.5.5.7.1.31"
/* The validation certificate only has to live through one validation. */
#define ALPN_CERT_SECONDS (7 * 24 * 3600)
#define SERIAL_BYTES 16
/* RFC 5280 4.1.2.2: a serial number is at most 20 octets */
#define SERIAL_MAX 20
/* A CA's clock may run ahead of ours: a certificate valid from up to this far in the future is
 * still taken (it will be valid by the time anyone notices). */
#define CLOCK_SKEW_SECONDS 300

EVP_PKEY *certs_key_new(void)
{
    return EVP_EC_gen("P-256");
}

/* A subjectAltName of dNSNames. */
static X509_EXTENSION *san_ext(const char *const *names, size_t n)
{
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    X509_EXTENSION *ext = NULL;
    size_t i;

    if (!gens)
        return NULL;
    for (i = 0; i < n; i++) {
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_IA5STRING *s = ASN1_IA5STRING_new();
        if (!g || !s || !ASN1_STRING_set(s, names[i], (int)strlen(names[i]))) {
            GENERAL_NAME_free(g);
            ASN1_IA5STRING_free(s);
            goto out;
        }
        GENERAL_NAME_set0_value(g, GEN_DNS, s);
        if (!sk_GENERAL_NAME_push(gens, g)) {
            GENERAL_NAME_free(g);
            goto out;
        }
    }
    ext = X509V3_EXT_i2d(NID_subject_alt_name, 0, gens);
out:
    GENERAL_NAMES_free(gens);
    return ext;
}

int certs_csr_der(EVP_PKEY *key, const char *const *names, size_t n_names, unsigned char **der)
{
    X509_REQ *req = X509_REQ_new();
    STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
    X509_EXTENSION *san = san_ext(names, n_names);
    X509_NAME *subj;
    int len = -1;

    *der = NULL;
    if (!req || !exts || !san || !sk_X509_EXTENSION_push(exts, san))
        goto out;
    san = NULL;
    subj = X509_REQ_get_subject_name(req);
    if (!X509_REQ_set_version(req, X509_REQ_VERSION_1)
        || !X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC,
                                       (const unsigned char *)names[0], -1, -1, 0)
        || !X509_REQ_add_extensions(req, exts) || !X509_REQ_set_pubkey(req, key)
        || !X509_REQ_sign(req, key, EVP_sha256()))
        goto out;
    len = i2d_X509_REQ(req, der);
    if (len <= 0) {
        *der = NULL;
        len = -1;
    }
out:
    X509_EXTENSION_free(san);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    X509_REQ_free(req);
    return len;
}

/* The critical acmeIdentifier extension: an OCTET STRING of SHA-256(key authorization), itself
 * the extension's value (RFC 8737 3). */
static X509_EXTENSION *acme_identifier_ext(const char *key_authorization)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    ASN1_OCTET_STRING *inner = ASN1_OCTET_STRING_new(), *outer = ASN1_OCTET_STRING_new();
    ASN1_OBJECT *oid = OBJ_txt2obj(ACME_IDENTIFIER_OID, 1);
    X509_EXTENSION *ext = NULL;
    unsigned char *der = NULL;
    int len;

    if (!inner || !outer || !oid)
        goto out;
    SHA256((const unsigned char *)key_authorization, strlen(key_authorization), md);
    if (!ASN1_OCTET_STRING_set(inner, md, sizeof(md)))
        goto out;
    len = i2d_ASN1_OCTET_STRING(inner, &der);
    if (len > 0 && ASN1_OCTET_STRING_set(outer, der, len))
        ext = X509_EXTENSION_create_by_OBJ(NULL, oid, 1, outer);
out:
    OPENSSL_free(der);
    ASN1_OBJECT_free(oid);
    ASN1_OCTET_STRING_free(outer);
    ASN1_OCTET_STRING_free(inner);
    return ext;
}

/* A random positive serial. */
static int set_serial(X509 *x)
{
    BIGNUM *bn = BN_new();
    int ok = bn && BN_rand(bn, SERIAL_BYTES * 8 - 1, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY)
             && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));

    BN_free(bn);
    return ok ? 0 : -1;
}

int certs_alpn_cert(const char *name, const char *key_authorization, X509 **cert,
                    EVP_PKEY **key)
{
    X509 *x = X509_new();
    EVP_PKEY *k = certs_key_new();
    X509_EXTENSION *san = san_ext(&name, 1);
    X509_EXTENSION *id = acme_identifier_ext(key_authorization);
    X509_NAME *subj;

    if (!x || !k || !san || !id || !X509_set_version(x, X509_VERSION_3) || set_serial(x) < 0
        || !X509_gmtime_adj(X509_getm_notBefore(x), 0)
        || !X509_gmtime_adj(X509_getm_notAfter(x), ALPN_CERT_SECONDS))
        goto fail;
    subj = X509_get_subject_name(x);
    if (!X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC, (const unsigned char *)name, -1,
                                    -1, 0)
        || !X509_set_issuer_name(x, subj) || !X509_set_pubkey(x, k)
        || !X509_add_ext(x, san, -1) || !X509_add_ext(x, id, -1)
        || !X509_sign(x, k, EVP_sha256()))
        goto fail;
    X509_EXTENSION_free(san);
    X509_EXTENSION_free(id);
    *cert = x;
    *key = k;
    return 0;
fail:
    X509_EXTENSION_free(san);
    X509_EXTENSION_free(id);
    EVP_PKEY_free(k);
    X509_free(x);
    return -1;
}

STACK_OF(X509) *certs_chain_parse(const char *pem, size_t len)
{
    BIO *bio = len <= INT32_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
    STACK_OF(X509) *chain = sk_X509_new_null();
    X509 *x;

    ERR_clear_error();
    if (!bio || !chain)
        goto fail;
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        if (!sk_X509_push(chain, x)) {
            X509_free(x);
            goto fail;
        }
    }
    /* The loop ends on "no start line" after the last certificate; any other error (a
     * certificate cut short, bad base64, bad DER) means the download was not the chain. */
    if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE
        || sk_X509_num(chain) == 0)
        goto fail;
    ERR_clear_error();
    BIO_free(bio);
    return chain;
fail:
    ERR_clear_error();
    sk_X509_pop_free(chain, X509_free);
    BIO_free(bio);
    return NULL;
}

char *certs_chain_pem(STACK_OF(X509) *chain, size_t *len)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *data, *out = NULL;
    long n;
    int i;

    if (!bio)
        return NULL;
    for (i = 0; i < sk_X509_num(chain); i++)
        if (!PEM_write_bio_X509(bio, sk_X509_value(chain, i)))
            goto out;
    n = BIO_get_mem_data(bio, &data);
    if (n > 0 && (out = malloc((size_t)n + 1)) != NULL) {
        memcpy(out, data, (size_t)n);
        out[n] = '\0';
        *len = (size_t)n;
    }
out:
    BIO_free(bio);
    return out;
}

int certs_ari_id(X509 *cert, char *out, size_t cap)
{
    const ASN1_OCTET_STRING *aki = X509_get0_authority_key_id(cert);
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
    unsigned char serial[SERIAL_MAX + 1];
    int n = bn ? BN_num_bytes(bn) : -1, rc = -1;
    ssize_t a;

    /* DER content octets of a positive INTEGER: big-endian, with a 0x00 in front when the
     * high bit is set (it would read as negative) */
    if (aki && n > 0 && n <= SERIAL_MAX) {
        bool pad;
        serial[0] = 0;
        BN_bn2bin(bn, serial + 1);
        pad = serial[1] & 0x80;
        a = b64url_encode(ASN1_STRING_get0_data(aki), (size_t)ASN1_STRING_length(aki), out,
                          cap);
        if (a >= 0 && (size_t)a + 1 < cap
            && b64url_encode(pad ? serial : serial + 1, (size_t)n + pad, out + a + 1,
                             cap - (size_t)a - 1)
                   >= 0) {
            out[a] = '.';
            rc = 0;
        }
    }
    BN_free(bn);
    return rc;
}

int certs_validity(X509 *cert, time_t *not_before, time_t *not_after)
{
    struct tm a, b;

    if (!ASN1_TIME_to_tm(X509_get0_notBefore(cert), &a)
        || !ASN1_TIME_to_tm(X509_get0_notAfter(cert), &b))
        return -1;
    *not_before = timegm(&a);
    *not_after = timegm(&b);
    return 0;
}

int certs_chain_check(STACK_OF(X509) *chain, EVP_PKEY *key, const char *const *names,
                      size_t n_names, time_t now, char *why, size_t whycap)
{
    X509 *leaf = sk_X509_value(chain, 0);
    time_t nb, na;
    size_t i;
    int c;

    if (!leaf || sk_X509_num(chain) < 2)
        return snprintf(why, whycap, "the chain has no issuer certificate"), -1;
    if (X509_check_private_key(leaf, key) != 1) {
        ERR_clear_error();
        return snprintf(why, whycap, "the certificate is not for the order's key"), -1;
    }
    for (i = 0; i < n_names; i++)
        if (X509_check_host(leaf, names[i], 0, X509_CHECK_FLAG_NO_WILDCARDS, NULL) != 1)
            return snprintf(why, whycap, "the certificate does not cover %s", names[i]), -1;
    if (certs_validity(leaf, &nb, &na) < 0 || nb > now + CLOCK_SKEW_SECONDS || na <= now)
        return snprintf(why, whycap, "the certificate is not valid now"), -1;
    /* Names alone (X509_check_issued) can be copied: the signature must be the issuer's. The
     * chain's trust is the TLS clients' business; this only refuses a broken download. */
    for (c = 0; c + 1 < sk_X509_num(chain); c++) {
        X509 *child = sk_X509_value(chain, c), *issuer = sk_X509_value(chain, c + 1);
        if (X509_check_issued(issuer, child) != X509_V_OK
            || X509_verify(child, X509_get0_pubkey(issuer)) != 1) {
            ERR_clear_error();
            return snprintf(why, whycap, "certificate %d of the chain is not issued by the next",
                            c),
                   -1;
        }
    }
    return 0;
}
