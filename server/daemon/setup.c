/* setup.c — see setup.h. */
#include "daemon/setup.h"

#include <limits.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "conf/directives.h"
#include "registry.h"
#include "exchange/site_access.h"
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
    if (conf_register(&site_access_conf_ops) < 0)
        abort(); /* more blocks than HANDLER_TYPES_MAX: a build mistake */
    handlers_register_conf();
    directive_set_check("tls_session_ticket_key_file", ticket_key_file_check);
}
