"""The Grafana dashboard shipped in deploy/grafana/ asks only for what the server exports: every
metric name in its queries is one a running server's /metrics has, and every label it groups
or filters by is a label of that metric (or one Prometheus adds at scrape: instance, job)."""

import json
import os
import re

from lib.server import REPO, ConfServer, Conn, req

DASHBOARD = os.path.join(REPO, "deploy", "grafana", "lfhttpd.json")
SAMPLE = re.compile(r'^([a-z_][a-z0-9_]*)(?:\{([^}]*)\})? \S+$')
METRIC = re.compile(r'\b(lfhttpd_[a-z0-9_]+)\b')
SCRAPE_LABELS = {"instance", "job"}


def exported(addr):
    """{metric name: set of its label names} from one scrape of /metrics."""
    with Conn(addr) as c:
        c.send(req("GET", "/metrics", [("Host", "localhost"), ("Connection", "close")]))
        r = c.read_response("GET")
    assert r.status == 200, r
    out = {}
    for line in r.body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, line
        labels = set(re.findall(r'([a-z_]+)="', m.group(2) or ""))
        out.setdefault(m.group(1), set()).update(labels)
    return out


def queries(node):
    """Every PromQL expression in the dashboard: panel targets and template variables."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("expr", "definition") and isinstance(v, str):
                yield v
            else:
                yield from queries(v)
    elif isinstance(node, list):
        for v in node:
            yield from queries(v)


def labels_used(expr):
    """Label names in `by (...)`, `without (...)` and selectors `{name=...}`."""
    names = set()
    for group in re.findall(r'\b(?:by|without)\s*\(([^)]*)\)', expr):
        names.update(n.strip() for n in group.split(",") if n.strip())
    for sel in re.findall(r'\{([^}]*)\}', expr):
        names.update(re.findall(r'([a-z_]+)\s*(?:=~|!~|!=|=)', sel))
    return names - {"le"}


def test_dashboard_names_only_exported_metrics_and_labels(tmpdir):
    root = os.path.join(tmpdir, "root")
    os.makedirs(root)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("hello\n")
    srv = ConfServer(tmpdir, "root %s\n" % root)
    # A labelled counter has its first series once a request has been counted.
    with Conn(srv.addr()) as c:
        c.send(req("GET", "/", [("Host", "localhost"), ("Connection", "close")]))
        assert c.read_response("GET").status == 200
        c.read_all()
    have = exported(srv.addr())
    srv.stop()
    assert srv.returncode == 0
    # The histogram's series are exported as _bucket, _sum and _count.
    dash = json.load(open(DASHBOARD))
    exprs = list(queries(dash))
    assert len(exprs) >= 20, exprs
    used = set()
    for expr in exprs:
        names = METRIC.findall(expr)
        assert names, "a query with no lfhttpd metric: %r" % expr
        for name in names:
            assert name in have, "%s: not exported by /metrics (query %r)" % (name, expr)
            used.add(name)
            extra = labels_used(expr) - have[name] - SCRAPE_LABELS
            assert not extra, "%s has no label %s (query %r)" % (name, extra, expr)
    # The dashboard covers the pool's gauges and the labelled request metrics.
    for name in ("lfhttpd_threads", "lfhttpd_pool_promotions_total", "lfhttpd_connections",
                 "lfhttpd_http_requests_total", "lfhttpd_http_request_duration_seconds_bucket"):
        assert name in used, name
