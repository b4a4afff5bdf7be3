/* main.c — lfhttpd entry point: configuration, server start-up, run, ordered shutdown. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "conf/config.h"
#include "log/diag.h"
#include "log/log.h"
#include "daemon/probe.h"
#include "daemon/server.h"
#include "daemon/setup.h"
#include "conn/sink.h"

int main(int argc, char **argv)
{
    if (probe_requested(argc, argv))
        return probe_main(argc, argv); /* the health-check client, not the server */

    /* Capabilities given through the ambient set (the unit's AmbientCapabilities=, to bind
     * ports below 1024 without root) stay this process's own, but go no further: a CGI script
     * must not inherit them. Fails harmlessly on kernels without ambient capabilities. */
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);

    daemon_setup_conf(); /* the handler types' directives, before any configuration */
    static struct config cfg;
    switch (config_from_args(&cfg, argc, argv)) {
    case CONFIG_EXIT_OK:
        return 0;
    case CONFIG_ERROR:
        return 2;
    case CONFIG_OK:
        break;
    }
    log_init((enum log_level)cfg.log_level, 2);
    log_set_json(cfg.error_log_json);

    /* The configuration's allocations now belong to the server's first runtime. */
    bool test_only = cfg.test_only;
    const char *file = cfg.config_file;
    static struct server srv;
    if (server_init(&srv, &cfg, argc, argv, &exchange_layer) < 0) {
        server_destroy(&srv);
        diag_publish(NULL, 0);
        return 2;
    }
    if (test_only) {
        diag("lfhttpd: configuration %s is valid\n", file ? file : "(command line)");
        diag_secrets(NULL, 0);
        server_destroy(&srv);
        diag_publish(NULL, 0);
        return 0;
    }
    diag_secrets(NULL, 0); /* the messages about the configuration are behind us */
    log_started();
    server_run(&srv);
    server_destroy(&srv);
    diag_publish(NULL, 0); /* the last line is written: the values can go */
    return 0;
}
