#!/usr/bin/env python3
"""The layers of lfhttpd's source tree, and a check that every include points down.

    python3 tools/layers.py           check: list every include that crosses folders upward
                                      (or sideways between two folders of one rank) and exit 1
    python3 tools/layers.py --map     print the folder map (bottom first): what each folder is
                                      and which folders it may include
    python3 tools/layers.py --edges   print every cross-folder include, counted per folder pair

A folder is a layer. A file may include headers of its own folder and of the folders listed
below its own; never one above, never one beside it. docs/ARCHITECTURE.md opens with the map
that --map prints, and `make test` runs the check.
"""
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Bottom first. (folder, what it is)
LAYERS = [
    ("server/base", "pure helpers with no state of the server: strings, clocks, hex and JSON, "
                    "addresses and CIDR, digests, carry buffers, CPU limits"),
    ("server/log", "the error log, log files written whole, the access-log buffer, counters"),
    ("server/lf", "the Leader/Followers pattern: event handler, handle set, thread pool, "
                  "timers, and the pattern's variants (edge, half-sync/half-async, reuseport)"),
    ("server/http", "HTTP/1.1 without I/O: the llhttp parser, requests, response heads, dates, "
                    "paths, the PROXY protocol"),
    ("server/rules", "site rules without I/O: path patterns, `_redirects` and `_headers` files, "
                     "the rule set's index, targets"),
    ("server/net", "sockets and TLS: listening sockets, TLS contexts and tickets"),
    ("server/acme", "automatic certificates: the ACME client, its state and its thread"),
    ("server/conf", "configuration: the parser, the directive registry, sites and locations, "
                    "one generation (runtime)"),
    ("server/conn", "connections: the acceptor, the connection's state machine, transports "
                    "(plain, TLS), the sink, per-client limits"),
    ("server/exchange", "one request's life: routing, auth, the handler interface, the "
                        "response's framing, streaming, deferral, the access log"),
    ("handlers/compress", "compression codecs and the variant cache, shared by static files "
                          "and streamed responses"),
    ("handlers/static", "static files: the open-file cache, MIME types, conditionals, ranges, "
                        "listings, representation choice"),
    ("handlers/cgi", "CGI/1.1: the exchange side and the spawner"),
    ("handlers/builtin", "built-in handlers: status, metrics, health, test endpoints"),
    ("handlers", "the handler registry: the one list of handler types"),
    ("server/daemon", "the process: main, the server object, reload and generations, signals, "
                      "systemd, the config watch, the probe client"),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
INCLUDE_ROOTS = ["server", "handlers"]   # the Makefile's -I paths
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    """The layer of a repository path: the deepest listed folder that holds it."""
    d = os.path.dirname(path)
    while d and d not in RANK:
        d = os.path.dirname(d)
    return d or None


def resolve(src, name):
    """Where `#include "name"` in src lands: beside src first, then the -I roots."""
    for base in [os.path.dirname(src)] + INCLUDE_ROOTS:
        p = os.path.normpath(os.path.join(base, name))
        if os.path.exists(os.path.join(REPO, p)):
            return p
    return None


def sources():
    for root in INCLUDE_ROOTS:
        for d, _, files in os.walk(os.path.join(REPO, root)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), REPO)


def edges():
    for src in sorted(sources()):
        text = open(os.path.join(REPO, src), encoding="utf-8").read()
        for name in INC.findall(text):
            dst = resolve(src, name)
            if dst is None:
                continue
            a, b = folder_of(src), folder_of(dst)
            if a != b:
                yield src, dst, a, b


def main(argv):
    if "--map" in argv:
        for i, (name, what) in enumerate(LAYERS):
            below = ", ".join(n.split("/", 1)[-1] if "/" in n else n for n, _ in LAYERS[:i])
            print(f"{name + '/':19} {what}")
            print(f"{'':19} may include: {below or 'nothing of the project'}")
        return 0
    if "--edges" in argv:
        count = {}
        for _, _, a, b in edges():
            count[(a, b)] = count.get((a, b), 0) + 1
        for (a, b), n in sorted(count.items(), key=lambda kv: (RANK[kv[0][0]], RANK[kv[0][1]])):
            print(f"{a:18} -> {b:18} {n}")
        return 0
    bad = [(s, d, a, b) for s, d, a, b in edges()
           if a is None or b is None or RANK[b] >= RANK[a]]
    for s, d, a, b in bad:
        print(f"{s}: includes {d}: {a} may not include {b} (see tools/layers.py --map)")
    unplaced = sorted({s for s in sources() if folder_of(s) is None})
    for s in unplaced:
        print(f"{s}: in no layer (tools/layers.py LAYERS)")
    if bad or unplaced:
        print(f"layers: {len(bad)} upward include(s), {len(unplaced)} file(s) in no layer")
        return 1
    print("layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
