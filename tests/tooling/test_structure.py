"""The structure: every include and every call in server/ and handlers/ points down the folder
map, no function there is longer than 80 lines, and every file there has its row in
docs/ARCHITECTURE.md.

tools/layers.py prints the map (--map) and lists each include that points up or sideways, and
(--objects) each symbol an object file uses that a folder above it defines; the suite fails
while it lists any, so a new upward include or call is caught where it is written.
"""

import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def layers(*args):
    return subprocess.run([sys.executable, os.path.join(REPO, "tools", "layers.py")] + list(args),
                          cwd=REPO, capture_output=True, text=True, timeout=60)


def test_layers_point_down():
    """Includes from the sources, calls from the objects of the build under test."""
    build = os.environ.get("LFHTTPD_BUILD", "build")
    objdir = build if os.path.isabs(build) else os.path.join(REPO, build)
    r = layers("--objects", os.path.join(objdir, "obj"))
    assert r.returncode == 0, "tools/layers.py exit %d:\n%s%s" % (r.returncode, r.stdout,
                                                                   r.stderr)
    assert "every include points down" in r.stdout, r.stdout
    assert "every call points down" in r.stdout, r.stdout


def test_symbol_check_fails_on_an_upward_call(tmp_path):
    """A listing in which handlers/compress uses a symbol handlers/static defines (an extern
    declared in a lower header: the includes alone look fine) fails the check and names the
    use; the same listing without that use passes."""
    down = textwrap.dedent("""\
        handlers/static/static_file.o: static_file_handler D 0000000000000000 0000000000000068
        handlers/static/static_file.o: compress_process_start U
        handlers/compress/compressor.o: compress_process_start T 0000000000000100 0000000000000020
        handlers/compress/compressor.o: malloc U
        server/base/clock.o: clock_ms T 0000000000000000 0000000000000010
        handlers/compress/compress_stream.o: clock_ms U
        """)
    up = down + "handlers/compress/compress_stream.o: static_file_handler U\n"
    ok, bad = tmp_path / "down.nm", tmp_path / "up.nm"
    ok.write_text(down)
    bad.write_text(up)
    r = layers("--nm", str(ok))
    assert r.returncode == 0 and "every call points down" in r.stdout, r.stdout + r.stderr
    r = layers("--nm", str(bad))
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("handlers/compress/compress_stream.o: uses static_file_handler, defined in "
            "handlers/static/") in r.stdout, r.stdout
    assert "1 upward call(s)" in r.stdout, r.stdout


def test_no_function_over_80_lines():
    r = subprocess.run([sys.executable, os.path.join(REPO, "tools", "funclen.py"), "80"],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "tools/funclen.py exit %d:\n%s%s" % (r.returncode, r.stdout,
                                                                    r.stderr)
    assert "0 function(s) over 80 lines" in r.stdout, r.stdout


def test_every_source_file_has_a_row_in_the_architecture():
    """docs/ARCHITECTURE.md's "Source files" names every file of server/ and handlers/, so a
    file added without saying what it is fails here."""
    doc = open(os.path.join(REPO, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    start = doc.index("## Source files")
    section = doc[start:doc.index("\n## ", start + 1)]
    missing = []
    for top in ("server", "handlers"):
        for d, _, files in os.walk(os.path.join(REPO, top)):
            for f in files:
                stem, ext = os.path.splitext(f)
                if ext in (".c", ".h", ".S", ".html") and stem + "." not in section:
                    missing.append(os.path.relpath(os.path.join(d, f), REPO))
    assert not missing, "no row in docs/ARCHITECTURE.md's Source files: %s" % sorted(missing)
