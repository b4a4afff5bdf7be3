/* jws.h — the ACME client's JOSE pieces: base64url, the account key's JWK and its thumbprint
 * (RFC 7638), ES256 signatures (RFC 7518 3.4: raw r||s, not DER), flattened JWS requests
 * (RFC 8555 6.2) and key authorizations (RFC 8555 8.1).
 *
 * Pure functions over OpenSSL keys and caller buffers; the JSON they emit is built with json-c,
 * so values that come from the CA (URLs, nonces) are escaped by the library. */
#ifndef LF_ACME_JWS_H
#define LF_ACME_JWS_H

#include <openssl/types.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A SHA-256 in base64url without padding: 43 characters. */
#define JWS_THUMBPRINT_LEN 43
/* ES256: r and s, 32 bytes each, big-endian. */
#define JWS_ES256_SIG_LEN 64

/* base64url without padding (RFC 4648 5) of in[0..len) into out (NUL-terminated). Returns the
 * length written, or -1 when out is too small. */
ssize_t b64url_encode(const void *in, size_t len, char *out, size_t cap);
/* The encoded length of `len` bytes (without the NUL); a constant expression for arrays. */
#define B64URL_LEN(len) ((len) / 3 * 4 + ((len) % 3 ? (len) % 3 + 1 : 0))
size_t b64url_len(size_t len);

/* The public JWK of `key` in the canonical form of RFC 7638 3.2 (required members only,
 * lexicographic order, no white space): EC P-256 {"crv","kty","x","y"} or RSA {"e","kty","n"}.
 * Returns the length, or -1 (unsupported key, buffer too small). */
ssize_t jws_jwk(EVP_PKEY *key, char *out, size_t cap);
/* The RFC 7638 thumbprint of `key` (SHA-256, base64url) into out[JWS_THUMBPRINT_LEN + 1]. */
int jws_thumbprint(EVP_PKEY *key, char out[JWS_THUMBPRINT_LEN + 1]);
/* Sign data with the P-256 key: SHA-256, ECDSA, r||s in sig. 0 or -1. */
int jws_es256_sign(EVP_PKEY *key, const void *data, size_t len, uint8_t sig[JWS_ES256_SIG_LEN]);
/* The flattened JWS of `payload` (NULL: the empty payload of a POST-as-GET) for `url` with
 * `nonce`: protected header {"alg":"ES256", "kid": kid} or, when kid is NULL, {"jwk": ...}.
 * A malloc'd NUL-terminated string, or NULL. */
char *jws_build(EVP_PKEY *key, const char *kid, const char *nonce, const char *url,
                const char *payload);
/* token "." thumbprint into out. Returns the length, or -1 when out is too small. */
ssize_t jws_key_authorization(const char *token, const char *thumbprint, char *out, size_t cap);

#endif
