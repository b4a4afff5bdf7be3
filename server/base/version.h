#ifndef LF_VERSION_H
#define LF_VERSION_H
#define LFHTTPD_VERSION "0.1.0"
#endif
