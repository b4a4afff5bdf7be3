"""make install / uninstall, the installed configuration, units, logrotate snippet and man
pages."""

import os
import pwd
import re
import subprocess
import sys

from lib.ops import run_lfhttpd, write_file
from lib.server import BUILD, REPO, Server, T, binary, get

SANITIZE = {"build-tsan": "thread", "build-asan": "address,undefined"}


def make(*args, timeout=300):
    """make in the repository with this suite's build (nothing is rebuilt: it is current)."""
    build = os.path.basename(os.path.normpath(BUILD))
    cmd = ["make", "--no-print-directory", "BUILD=" + BUILD]
    if build in SANITIZE:
        cmd.append("SANITIZE=" + SANITIZE[build])
    # A make of its own, not a part of the `make test` that may be running this suite.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    p = subprocess.run(cmd + list(args), cwd=REPO, stdin=subprocess.DEVNULL, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=T(timeout))
    out = p.stdout.decode("utf-8", "replace")
    assert p.returncode == 0, out
    return out


def prefix_install(tmpdir):
    """make install with every path under tmpdir, so that the result runs as installed (as
    Debian's `daemon` account: there is no lfhttpd user on a test machine)."""
    paths = {
        "SERVICE_USER": "daemon",
        "SERVICE_GROUP": "daemon",
        "PREFIX": os.path.join(tmpdir, "usr"),
        "SYSCONFDIR": os.path.join(tmpdir, "etc"),
        "LOGDIR": os.path.join(tmpdir, "var/log/lfhttpd"),
        "UNITDIR": os.path.join(tmpdir, "usr/lib/systemd/system"),
    }
    make("install", *("%s=%s" % kv for kv in paths.items()))
    return paths


def test_installed_binary_serves_the_installed_site(tmpdir):
    p = prefix_install(tmpdir)
    sbin = os.path.join(p["PREFIX"], "sbin/lfhttpd")
    conf = os.path.join(p["SYSCONFDIR"], "lfhttpd/lfhttpd.conf")
    assert os.access(sbin, os.X_OK)
    text = open(conf).read()
    # The configuration names the installed site, MIME types and log directory.
    www = os.path.join(p["PREFIX"], "share/lfhttpd/www")
    assert "\nroot %s\n" % www in text, text
    assert "\nmime_types %s/lfhttpd/mime.types\n" % p["SYSCONFDIR"] in text
    assert "\naccess_log %s/access.log\n" % p["LOGDIR"] in text
    assert not os.path.exists(os.path.join(www, "cgi-bin")), "the CGI demos are not installed"

    rc, _, err = run_lfhttpd(["-t", "-c", conf])
    assert rc == 0 and "is valid" in err, err
    # As installed, but on a loopback port instead of 80.
    srv = Server(binary_path=sbin, args=["--config", conf])
    try:
        r = get(srv, "/")
        assert r.status == 200
        assert r.body == open(os.path.join(REPO, "www/index.html"), "rb").read()
        assert r.header("X-Content-Type-Options") == "nosniff"
        r = get(srv, "/no-such-page")
        assert r.status == 404
        assert r.body == open(os.path.join(REPO, "www/404.html"), "rb").read()
        assert get(srv, "/style.css").header("Content-Type") == "text/css; charset=utf-8"
    finally:
        srv.stop()
    log = open(os.path.join(p["LOGDIR"], "access.log")).read()
    assert '"GET /no-such-page HTTP/1.1" 404' in log, log


def test_installed_units_pass_systemd_analyze_verify(tmpdir):
    p = prefix_install(tmpdir)
    units = [os.path.join(p["UNITDIR"], u) for u in ("lfhttpd.service", "lfhttpd.socket")]
    service = open(units[0]).read()
    assert "ExecStart=%s/sbin/lfhttpd --config %s/lfhttpd/lfhttpd.conf\n" % (
        p["PREFIX"], p["SYSCONFDIR"]) in service, service
    assert "ReadWritePaths=%s\n" % p["LOGDIR"] in service
    assert "User=daemon\nGroup=daemon\n" in service
    # Documentation=man:NAME(SECTION): the installed pages. Checked here rather than by
    # systemd-analyze, whose check runs man(1), which a fresh server may not have working.
    v = subprocess.run(["systemd-analyze", "verify", "--man=no"] + units,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=T(60))
    out = v.stdout.decode()
    assert v.returncode == 0 and out.strip() == "", out
    for u in units:
        pages = re.findall(r"man:([\w.-]+)\((\d)\)", open(u).read())
        assert pages, u
        for name, sec in pages:
            base = os.path.join(p["PREFIX"], "share/man", "man" + sec, "%s.%s" % (name, sec))
            assert os.path.exists(base) or os.path.exists(base + ".gz"), (u, name, sec)
    # The same check fails for a broken unit (so the pass above means something).
    bad = write_file(os.path.join(tmpdir, "bad.service"),
                     service.replace("Type=notify", "Type=notify-or-not"))
    v = subprocess.run(["systemd-analyze", "verify", "--man=no", bad], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=T(60))
    assert "Failed to parse service type" in v.stdout.decode(), v.stdout


def test_destdir_staging_and_uninstall(tmpdir):
    dest = os.path.join(tmpdir, "stage")
    out = make("install", "DESTDIR=" + dest)
    etc = os.path.join(dest, "etc/lfhttpd")
    expect = [
        "usr/local/sbin/lfhttpd", "usr/local/share/lfhttpd/www/index.html",
        "usr/local/share/man/man8/lfhttpd.8", "usr/local/share/man/man5/lfhttpd.conf.5",
        "usr/local/lib/systemd/system/lfhttpd.service",
        "usr/local/lib/systemd/system/lfhttpd.socket", "etc/logrotate.d/lfhttpd",
        "etc/lfhttpd/lfhttpd.conf", "etc/lfhttpd/mime.types", "var/log/lfhttpd",
    ]
    for rel in expect:
        assert os.path.exists(os.path.join(dest, rel)), rel
    # The paths inside are the real ones, never DESTDIR's.
    conf = open(os.path.join(etc, "lfhttpd.conf")).read()
    assert "\nroot /usr/local/share/lfhttpd/www\n" in conf, conf
    assert dest not in conf
    unit = open(os.path.join(dest, "usr/local/lib/systemd/system/lfhttpd.service")).read()
    assert "ExecStart=/usr/local/sbin/lfhttpd --config /etc/lfhttpd/lfhttpd.conf" in unit
    assert "User=lfhttpd\nGroup=lfhttpd\n" in unit
    assert "\tsu lfhttpd lfhttpd\n" in open(os.path.join(dest, "etc/logrotate.d/lfhttpd")).read()
    assert dest not in unit

    # A second install keeps the administrator's configuration.
    write_file(os.path.join(etc, "lfhttpd.conf"), conf + "threads 3\n")
    out = make("install", "DESTDIR=" + dest)
    assert "kept %s/lfhttpd.conf" % etc in out, out
    assert open(os.path.join(etc, "lfhttpd.conf")).read().endswith("threads 3\n")

    # uninstall removes everything else, keeps the changed file (and removes mime.types,
    # unchanged).
    out = make("uninstall", "DESTDIR=" + dest)
    assert "kept %s/lfhttpd.conf (changed)" % etc in out, out
    left = sorted(os.path.relpath(os.path.join(d, f), dest)
                  for d, _, files in os.walk(dest) for f in files)
    assert left == ["etc/lfhttpd/lfhttpd.conf"], left


def test_logrotate_snippet(tmpdir):
    p = prefix_install(tmpdir)
    snippet = os.path.join(p["SYSCONFDIR"], "logrotate.d/lfhttpd")
    text = open(snippet).read()
    assert "%s/*.log {" % p["LOGDIR"] in text
    assert "\n\tsu daemon daemon\n" in text, text
    assert "--signal=SIGUSR1 lfhttpd.service" in text
    write_file(os.path.join(p["LOGDIR"], "access.log"), "a line\n")
    # As the package leaves it: the directory belongs to the service's user.
    daemon = pwd.getpwnam("daemon")
    os.chown(p["LOGDIR"], daemon.pw_uid, daemon.pw_gid)
    os.chmod(p["LOGDIR"], 0o750)
    for d in (tmpdir, os.path.join(tmpdir, "var"), os.path.join(tmpdir, "var/log")):
        os.chmod(d, 0o755)
    # -d: what it would do, without doing it; the snippet must parse and select the log.
    r = subprocess.run(["logrotate", "-d", "-s", os.path.join(tmpdir, "state"), snippet],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=T(30))
    out = r.stdout.decode()
    assert r.returncode == 0, out
    assert "error" not in out.lower(), out
    assert "switching euid from 0 to %d" % daemon.pw_uid in out, out
    assert "considering log %s/access.log" % p["LOGDIR"] in out, out


def _man_directives(page):
    names = set()
    for line in open(page):
        if line.startswith(".It Ic "):
            names |= set(re.findall(r"(?:^\.It| ,) Ic (\S+)", line.rstrip()))
    return names


def _readme_directives():
    """{name: "top" or "site"} from README.md's two directive tables."""
    out = subprocess.run([sys.executable, os.path.join(REPO, "tools/mkman.py"), "--directives",
                          os.path.join(REPO, "README.md")], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    return dict(l.split() for l in out.splitlines())


def _table_directives():
    """{name: context flags} from every directive table of the sources: the core's
    (server/conf/directives.c) and each handler type's (handlers/: `static const struct
    directive NAME[] = {`, registered at start-up)."""
    found, tables = {}, 0
    for top in ("server", "handlers"):
        for d, _, files in os.walk(os.path.join(REPO, top)):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                src = open(os.path.join(d, f)).read()
                for m in re.finditer(r"const struct directive \w+\[\] = \{", src):
                    table = src[m.start():]
                    table = table[:table.index("\n};")]
                    entries = re.findall(r'\{\s*"([a-z_]+)",\s*(IN_[A-Z_]+(?:\s*\|\s*IN_[A-Z_]+)*)',
                                         table)
                    assert entries, (f, "a directive table without entries")
                    for name, ctx in entries:
                        assert name not in found, ("directive in two tables", name)
                        found[name] = ctx
                    tables += 1
    assert tables >= 2, "the core's table and the handler types' tables"
    return found


def test_man_pages_lint_clean_and_list_every_directive(tmpdir):
    make("man")
    man = os.path.join(REPO, BUILD, "man")
    pages = [os.path.join(man, "lfhttpd.8"), os.path.join(man, "lfhttpd.conf.5")]
    # mandoc -T lint: any warning or error fails (style notes such as "referenced manual not
    # found", for pages not installed here, are not reported at this level).
    r = subprocess.run(["mandoc", "-T", "lint", "-W", "warning"] + pages,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=T(30))
    assert r.returncode == 0 and r.stdout.decode().strip() == "", r.stdout.decode()

    readme = _readme_directives()
    assert _man_directives(pages[1]) == set(readme)
    # Site rules: the README's section whole, its pattern table a tagged list.
    conf5 = open(pages[1]).read()
    rules = conf5[conf5.index(".Sh SITE RULES"):conf5.index(".Sh HANDLERS")]
    for item in (".It Li /old/*", ".It Li /assets/**", ".It Li /a/*.{js,css}", ".Bl -enum"):
        assert item in rules, item
    assert "_redirects" in rules and "_headers" in rules and "Shadowing" in rules
    table = _table_directives()
    assert len(table) > 40, table
    assert set(readme) == set(table), ("README only: %s; parser only: %s"
                                       % (sorted(set(readme) - set(table)),
                                          sorted(set(table) - set(readme))))
    # The contexts agree: README's process-wide table holds exactly the top-level-only ones.
    wrong = sorted(n for n, c in table.items() if (c == "IN_TOP") != (readme[n] == "top"))
    assert not wrong, "context differs between README and the table: %s" % wrong
    # The binary agrees: each directive is known (an invalid value, never "unknown").
    conf = os.path.join(tmpdir, "probe.conf")
    for name in sorted(readme):
        write_file(conf, "%s\n" % name)
        rc, _, err = run_lfhttpd(["-t", "-c", conf])
        assert rc == 2 and "unknown directive" not in err, (name, err)
    write_file(conf, "no_such_directive 1\n")
    rc, _, err = run_lfhttpd(["-t", "-c", conf])
    assert "unknown directive 'no_such_directive'" in err, err

    # lfhttpd(8) lists every command-line flag of --help.
    rc, usage, _ = run_lfhttpd(["--help"])
    flags = set(re.findall(r"--([a-z][a-z-]+)", usage))
    page = open(pages[0]).read()
    for flag in flags:
        assert "Fl \\-%s" % flag.replace("-", "\\-") in page or \
            "Fl %s" % flag in page, flag


def test_the_shipped_configuration_documents_every_directive(tmpdir):
    """conf/lfhttpd.conf (installed as lfhttpd.conf, README: "every directive is documented in
    it") has a line for each directive of README's tables: set (`NAME value`) or commented
    (`# NAME ...`), so that a directive added to README without its line here fails; and the
    file as shipped is valid."""
    readme = _readme_directives()
    assert len(readme) > 40, readme
    path = os.path.join(REPO, "conf", "lfhttpd.conf")
    text = open(path).read()
    named = set(re.findall(r"^#?[ \t]*([a-z_]+)(?=[ \t]|$)", text, re.M))
    missing = sorted(set(readme) - named)
    assert not missing, "directives conf/lfhttpd.conf does not document: %s" % missing
    rc, _, err = run_lfhttpd(["-t", "-c", path], cwd=REPO)
    assert rc == 0, err


def test_check_creates_no_log_file(tmpdir):
    """`lfhttpd -t` checks the log paths without creating the files: run by root before the
    service's first start, it must not leave a root-owned access.log that the service's user
    cannot open."""
    logs = os.path.join(tmpdir, "logs")
    os.makedirs(logs)
    conf = write_file(os.path.join(tmpdir, "c.conf"),
                      "access_log %s/access.log\nerror_log %s/error.log\nroot %s\n"
                      % (logs, logs, tmpdir))
    rc, _, err = run_lfhttpd(["-t", "-c", conf])
    assert rc == 0, err
    assert os.listdir(logs) == []
    # Still checked: a directory that is not there, a file that cannot be written.
    write_file(conf, "access_log %s/none/access.log\n" % tmpdir)
    rc, _, err = run_lfhttpd(["-t", "-c", conf])
    assert rc == 2 and "%s:1: access_log %s/none/access.log: No such file" % (conf, tmpdir) in err
    ro = write_file(os.path.join(logs, "ro.log"), "", mode=0o444)
    write_file(conf, "access_log %s\n" % ro)
    for d in (tmpdir, logs):
        os.chmod(d, 0o755)
    os.chmod(conf, 0o644)
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", binary(),
                        "-t", "-c", conf], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=T(30))
    assert p.returncode == 2 and b"Permission denied" in p.stderr, p.stderr
