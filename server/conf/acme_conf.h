/* acme_conf.h — the ACME directives (automatic certificates, acme/acme.h): `acme on` in a
 * server block, the acme_* settings at the top level, and the checks that need the whole
 * configuration.
 *
 * One certificate covers the names of every server block with `acme on` (at most
 * ACME_MAX_NAMES): one account, one order, one renewal schedule. Its settings are the top
 * level's. */
#ifndef LF_ACME_CONF_H
#define LF_ACME_CONF_H

#include <limits.h>
#include <stdbool.h>

#include "acme/acme.h"

struct config;
struct directive;
struct dir_ctx;

/* Let's Encrypt's production directory: the default of acme_ca. */
#define ACME_CONF_DEFAULT_CA "https://acme-v02.api.letsencrypt.org/directory"
/* The state directory without acme_state_dir and without $STATE_DIRECTORY (systemd). */
#define ACME_CONF_DEFAULT_STATE "/var/lib/lfhttpd/acme"
#define ACME_CONF_URL_MAX 1024
#define ACME_CONF_EMAIL_MAX 255

struct config_acme {
    unsigned line; /* the first `acme on`; 0: ACME is off */
    char names[ACME_MAX_NAMES][ACME_NAME_MAX + 1];
    unsigned nnames;
    char directory[ACME_CONF_URL_MAX];    /* acme_ca; "" until config_acme_finish */
    char email[ACME_CONF_EMAIL_MAX + 1];  /* acme_email */
    bool agree_terms;                     /* acme_agree_terms on */
    char state_dir[PATH_MAX];             /* acme_state_dir; "" until config_acme_finish */
    unsigned state_line;                  /* its line; 0: the default */
    int challenge;                        /* enum acme_challenge; -1: chosen by the listeners */
    unsigned challenge_line;
    char ca_bundle[PATH_MAX];             /* acme_ca_bundle: roots for the CA's HTTPS; "" */
};

/* The directives' appliers (directives.c's table names them). */
int acme_conf_on(const struct directive *d, const struct dir_ctx *x, char **args, int nargs);
int acme_conf_ca(const struct directive *d, const struct dir_ctx *x, char **args, int nargs);
int acme_conf_email(const struct directive *d, const struct dir_ctx *x, char **args, int nargs);
int acme_conf_path(const struct directive *d, const struct dir_ctx *x, char **args, int nargs);
int acme_conf_challenge(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs);

/* After the whole configuration is read (listeners included): the defaults, and what only all
 * of it shows (contact, terms, a writable state directory, a listener for the challenge, the
 * names). 0, or -1 after printing "FILE:LINE: reason". */
int config_acme_finish(struct config *cfg);

/* The acme_settings for cfg's ACME names, leaving out those for which `skip` says a
 * configured certificate wins (NULL: none). Views into cfg. */
void config_acme_settings(const struct config *cfg, struct acme_settings *out,
                          bool (*skip)(const char *name, void *arg), void *arg);

#endif
