/* main.c — lfhttpd entry point: configuration, server start-up, run, ordered shutdown. */
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "log.h"
#include "server.h"

int main(int argc, char **argv)
{
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

    static struct server srv;
    if (server_init(&srv, &cfg) < 0) {
        server_destroy(&srv);
        config_free(&cfg);
        return 2;
    }
    if (cfg.test_only) {
        fprintf(stderr, "lfhttpd: configuration %s is valid\n",
                cfg.config_file ? cfg.config_file : "(command line)");
        server_destroy(&srv);
        config_free(&cfg);
        return 0;
    }
    server_run(&srv);
    server_destroy(&srv);
    config_free(&cfg);
    return 0;
}
