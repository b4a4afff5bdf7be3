/* setup.c — see setup.h. */
#include "daemon/setup.h"

#include <limits.h>

#include <openssl/crypto.h>

#include "conf/directives.h"
#include "exchange/handler.h"
#include "net/tls.h"

/* tls_session_ticket_key_file: checked where it is named, so that the error says FILE:LINE. */
static int ticket_key_file_check(const char *path, char *err, size_t errlen)
{
    unsigned char keys[TLS_MAX_TICKET_KEYS * TLS_TICKET_KEY_SIZE];
    int n = tls_ticket_key_file_read(path, keys, err, errlen);
    OPENSSL_cleanse(keys, sizeof(keys));
    return n < 0 ? -1 : 0;
}

void daemon_setup_conf(void)
{
    handlers_register_conf();
    directive_set_check("tls_session_ticket_key_file", ticket_key_file_check);
}
