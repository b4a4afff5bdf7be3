/* cgi.h — what the CGI handler (cgi.c) tells the status page and the metrics. */
#ifndef LF_CGI_H
#define LF_CGI_H

#include <stdint.h>

struct server;

struct cgi_stats {
    unsigned running;           /* scripts started and not reaped (or about to start) */
    unsigned max;               /* cgi_max of the configuration (the caller's) */
    uint64_t started, rejected, timeouts, failed;
};

/* The process-wide counters (all zero while no location runs CGI). */
void cgi_get_stats(struct server *srv, struct cgi_stats *out);

#endif
