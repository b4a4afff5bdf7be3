/* digest.c — see digest.h. */
#include "base/digest.h"

#include <openssl/evp.h>

#include "base/hex.h"

bool digest_hex(const void *data, size_t len, char *out, size_t nhex)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (nhex > 64 || EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 ||
        mdlen * 2 < nhex)
        return false;
    for (size_t i = 0; i < nhex; i++)
        out[i] = hex_lower(md[i / 2] >> (i % 2 ? 0 : HEX_DIGIT_BITS));
    out[nhex] = '\0';
    return true;
}
