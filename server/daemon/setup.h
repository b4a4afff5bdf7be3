/* setup.h — what the daemon hands to the lower layers before it reads a configuration: the
 * handler types' directives and settings (handlers/registry.c), and the checks of directive
 * values that only a higher layer can make (a TLS ticket key file's contents). */
#ifndef LF_SETUP_H
#define LF_SETUP_H

/* Once, at start-up (main(), and the tests that load configurations). Idempotent. */
void daemon_setup_conf(void);

#endif
