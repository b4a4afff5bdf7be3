/* certs.h — the ACME client's X.509 work: P-256 keys, the CSR of an order, the TLS-ALPN-01
 * validation certificate (RFC 8737 3) and the checks an issued chain must pass before it is
 * stored or installed. Pure functions over OpenSSL objects. */
#ifndef LF_ACME_CERTS_H
#define LF_ACME_CERTS_H

#include <openssl/safestack.h>
#include <openssl/types.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <time.h>

/* A new ECDSA P-256 key (account keys and certificate keys alike), or NULL. */
EVP_PKEY *certs_key_new(void);

/* The DER CSR for `names` (the first also the subject's CN), signed by `key`: malloc'd in *der,
 * its length returned; -1 on failure. */
int certs_csr_der(EVP_PKEY *key, const char *const *names, size_t n_names, unsigned char **der);

/* The self-signed TLS-ALPN-01 certificate for `name`: a new P-256 key, one dNSName, and the
 * critical id-pe-acmeIdentifier extension holding SHA-256(key_authorization) as an OCTET
 * STRING. 0, or -1. */
int certs_alpn_cert(const char *name, const char *key_authorization, X509 **cert,
                    EVP_PKEY **key);

/* A PEM certificate chain (leaf first) from len bytes: NULL when it holds no certificate or
 * anything that does not parse (a truncated download). */
STACK_OF(X509) *certs_chain_parse(const char *pem, size_t len);
/* The chain as PEM text, malloc'd; its length in *len. NULL on failure. */
char *certs_chain_pem(STACK_OF(X509) *chain, size_t *len);

/* Whether `chain` may be installed for `names` with `key`: the leaf holds key's public half,
 * covers every name (exactly, no wildcard), is valid at `now`, and each certificate is issued
 * by the next one (at least one issuer: a leaf alone is a truncated chain). 0, or -1 with the
 * reason in why. */
int certs_chain_check(STACK_OF(X509) *chain, EVP_PKEY *key, const char *const *names,
                      size_t n_names, time_t now, char *why, size_t whycap);

/* The certificate's ARI identifier (RFC 9773 4.1): base64url of its Authority Key Identifier's
 * keyIdentifier, ".", base64url of its serial number's DER content octets. 0, or -1 (no AKI,
 * too small a buffer). */
int certs_ari_id(X509 *cert, char *out, size_t cap);

/* The leaf's validity period. 0, or -1. */
int certs_validity(X509 *cert, time_t *not_before, time_t *not_after);

#endif
