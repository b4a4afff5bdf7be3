/* builtin_env.h — `handler env [json|js]`: runtime configuration for a single-page app, from an
 * allow-list of environment variables (`env_expose NAME...`, the type's own directive).
 *
 * The body is made when the location's instance is created (each configuration generation)
 * from the process's environment: a JSON object of the listed variables that are set
 * ({"API_URL":"https://..."}; an unset one is left out), or with `js` the script
 * `window.__ENV = {...};`. Values are escaped so that the object is valid JSON and can stand
 * inside an HTML <script> (json_escape_script). Nothing but the listed names is ever read.
 * The response carries a strong ETag (a hash of the body) and Cache-Control: no-cache, so a
 * browser revalidates each time and gets a 304 while the body is the same. */
#ifndef LF_BUILTIN_ENV_H
#define LF_BUILTIN_ENV_H

#include "conf/handler_conf.h"
#include "exchange/handler.h"

extern const struct handler_ops env_handler;
extern const struct handler_conf_ops env_conf_ops;

#endif
