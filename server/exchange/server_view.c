/* server_view.c — the names of the pool's roles, as /server-status and /metrics print them
 * (server_view.h). */
#include "exchange/server_view.h"

const char *const gauge_role_names[GAUGE_ROLES] = { "following", "leading", "processing" };
