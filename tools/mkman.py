#!/usr/bin/env python3
"""Make the manual pages from README.md, so that the two cannot drift.

    python3 tools/mkman.py README.md man/lfhttpd.conf.5.in build/man/lfhttpd.conf.5
    python3 tools/mkman.py --directives README.md     # the directive set, one per line

A template (mdoc(7)) is copied line by line; a line `@NAME@` is replaced by a part of the
README converted to mdoc:

    @cli-options@        the table of "## Command line"         -> a tagged list of options
    @cli-notes@          the paragraphs after it, up to "Signals:"
    @signals@            the paragraphs from "Signals:" to the end of that section
    @conf-format@        the paragraphs of "## Configuration file" before its first subsection
    @process-directives@ the table of "### Process-wide directives (top level only)"
    @site-intro@         the text of "### Sites and locations" before its table
    @site-directives@    the table of "### Sites and locations"
    @handlers@           the table of "## Handlers"
    @site-rules@         the whole of "## Site rules": paragraphs, literal blocks, its table of
                         patterns and its numbered list (with the bullets inside it)

Only what README.md says goes into the pages: a directive, a flag or a default is documented
once, there. Standard library only.
"""

import re
import sys


def sections(readme):
    """{heading text: [lines]} for every ## and ### heading (a ## section includes its ###)."""
    out = {}
    lines = readme.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#{2,3}) (.*)$", line)
        if not m:
            continue
        level = len(m.group(1))
        body = []
        for l in lines[i + 1:]:
            h = re.match(r"^(#{2,3}) ", l)
            if h and len(h.group(1)) <= level:
                break
            body.append(l)
        out[m.group(2).strip()] = body
    return out


def split_row(line):
    """Cells of a Markdown table row; `\\|` is a pipe inside a cell."""
    cells, cur, i = [], "", 0
    s = line.strip().strip("|")
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] == "|":
            cur += "|"
            i += 2
            continue
        if s[i] == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += s[i]
        i += 1
    cells.append(cur.strip())
    return cells


def table(body):
    """The rows (lists of cells) of the first table in `body`, without its header."""
    rows = []
    for line in body:
        if line.startswith("|"):
            rows.append(split_row(line))
        elif rows:
            break
    if len(rows) < 3:
        raise SystemExit("mkman: no table found")
    return rows[2:]         # the header and the |---| line


def paragraphs(body):
    """Paragraphs (joined lines) and literal blocks (4-space indented) before the first table
    or subsection, as ("p", text) / ("lit", [lines])."""
    out, cur, lit = [], [], []
    for line in body + [""]:
        if line.startswith("|") or line.startswith("### "):
            break
        if line.startswith("    ") and not cur:
            lit.append(line[4:])
            continue
        if lit and not line.startswith("    "):
            out.append(("lit", lit))
            lit = []
        if line.strip():
            cur.append(line.strip())
        elif cur:
            out.append(("p", " ".join(cur)))
            cur = []
    if lit:
        out.append(("lit", lit))
    if cur:
        out.append(("p", " ".join(cur)))
    return out


# ---- Markdown inline -> mdoc ----------------------------------------------------------------

CLOSE = ".,:;)]?!"


def esc_text(s):
    s = s.replace("\\", "\\e")
    return s


def esc_arg(s):
    """One macro argument: quoted when it has blanks; quotes and backslashes escaped."""
    s = s.replace("\\", "\\e").replace('"', "\\(dq")
    if s and len(s) == 1 and (s in CLOSE or s in "([|"):
        return "\\&" + s      # a delimiter mdoc would otherwise move out of the macro
    if re.search(r"\s", s) or s == "":
        s = '"%s"' % s
    return s


def text_lines(text, width=78):
    """Running text as mdoc input lines: each sentence on a line of its own, long ones wrapped
    (mdoc's rule "new sentence, new line"); none may start with a control character."""
    out = []
    for sentence in re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[a-z0-9)][.!?:])\s+(?=[A-Z`(])", text):
        line = ""
        for word in sentence.split():
            if line and len((line + " " + word).encode()) > width:
                out.append(line)
                line = word
            else:
                line = (line + " " + word) if line else word
        if line:
            out.append(line)
    return [("\\&" + l) if l[0] in ".'" else l for l in out]


def inline(md):
    """mdoc lines for a Markdown paragraph: code spans become .Ql, links their text."""
    md = re.sub(r"\[([^\]]+)\]\(#[^)]+\)", r"\1 in README.md", md)  # a README section
    md = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", md)      # [text](url) -> text
    md = re.sub(r"\*\*([^*]+)\*\*", r"\1", md)            # **bold** -> bold
    md = md.replace("\\|", "|")
    parts = re.split(r"(`[^`]*`)", md)
    lines = []
    pending_open = ""
    pending_word = ""
    i = 0
    while i < len(parts):
        p = parts[i]
        if p.startswith("`") and p.endswith("`") and len(p) >= 2:
            args = [esc_arg(p[1:-1])]
            if pending_open:
                args.insert(0, pending_open)
                pending_open = ""
            # Punctuation right after the span belongs on the macro line (no space before it).
            nxt = parts[i + 1] if i + 1 < len(parts) else ""
            m = re.match(r"^([%s]+)(?=\s|$)" % re.escape(CLOSE), nxt)
            if m:
                args += list(m.group(1))
                parts[i + 1] = nxt[m.end():]
            elif nxt and not nxt[0].isspace():
                args.append("Ns")       # glued to what follows
            if pending_word:        # "x/`code`": the word glued in front of the span
                lines.append(".No %s Ns Ql %s" % (esc_arg(pending_word), " ".join(args)))
                pending_word = ""
            else:
                lines.append(".Ql " + " ".join(args))
        else:
            text = p.strip()
            if text and text[-1] in "([" and i + 1 < len(parts) and \
                    (p.endswith("(") or p.endswith("[")):
                pending_open = text[-1]
                text = text[:-1].strip()
            elif text and i + 1 < len(parts) and not p[-1].isspace():
                words = text.rsplit(None, 1)
                pending_word = words[-1]
                text = words[0] if len(words) > 1 else ""
            if text:
                lines += text_lines(esc_text(text))
        i += 1
    if pending_open:
        lines.append(pending_open)
    # ".Ql x Ns" as the last line, or before a line starting with a blank: drop the Ns.
    return [l[:-3] if l.endswith(" Ns") and (k + 1 == len(lines)) else l
            for k, l in enumerate(lines)]


def para_lines(paras):
    out = []
    for kind, val in paras:
        if kind == "lit":
            out.append(".Bd -literal -offset indent")
            out += [("\\&" + esc_text(l)) if l[:1] in ".'" else esc_text(l) for l in val]
            out.append(".Ed")
        else:
            out.append(".Pp")
            out += inline(val)
    return out


def list_items(lines, start):
    """The items of a Markdown list starting at lines[start] ("N. " or "- " at this indent,
    continuation lines indented deeper): ([(text, [nested lines])], next index)."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    marker = re.compile(r"^ {%d}(?:\d+\.|-) " % indent)
    items, i = [], start
    while i < len(lines) and marker.match(lines[i]):
        text = [marker.sub("", lines[i])]
        nested = []
        i += 1
        while i < len(lines) and lines[i].strip() and not marker.match(lines[i]):
            if nested or re.match(r"^\s+(?:\d+\.|-) ", lines[i]):
                nested.append(lines[i])
            else:
                text.append(lines[i].strip())
            i += 1
        items.append((" ".join(text), nested))
    return items, i


def list_lines(lines, start):
    """mdoc for the list at lines[start]: .Bl -enum or -bullet, nested lists inside items."""
    kind = "-enum" if re.match(r"^\s*\d+\. ", lines[start]) else "-bullet"
    items, end = list_items(lines, start)
    out = [".Bl %s" % kind]
    for text, nested in items:
        out.append(".It")
        out += inline(text)
        if nested:
            out += list_lines(nested, 0)[0]
    out.append(".El")
    return out, end


def section_lines(body):
    """mdoc for a whole README section: paragraphs, literal blocks (after a blank line),
    two-column tables (a tagged list) and lists."""
    out, para, i = [], [], 0

    def flush():
        if para:
            out.extend([".Pp"] + inline(" ".join(para)))
            para.clear()
    while i < len(body):
        line = body[i]
        if line.startswith("    ") and not para and (i == 0 or not body[i - 1].strip() or
                                                     body[i - 1].startswith("    ")):
            lit = []
            while i < len(body) and body[i].startswith("    "):
                lit.append(body[i][4:])
                i += 1
            out += para_lines([("lit", lit)])
            continue
        if line.startswith("|"):
            flush()
            rows = []
            while i < len(body) and body[i].startswith("|"):
                rows.append(body[i])
                i += 1
            out.append(".Bl -tag -width Ds")
            for cells in table(rows):
                spans = code_spans(cells[0])
                out.append(".It " + (" ".join("Li " + esc_arg(s) for s in spans) or
                                     esc_arg(cells[0])))
                out += inline(" ".join(cells[1:]))
            out.append(".El")
            continue
        if re.match(r"^(?:\d+\.|-) ", line):
            flush()
            lst, i = list_lines(body, i)
            out += lst
            continue
        if line.strip():
            para.append(line.strip())
        else:
            flush()
        i += 1
    flush()
    return out


def code_spans(cell):
    return re.findall(r"`([^`]*)`", cell.replace("\\|", "|"))


def directive_items(rows, context):
    out = [".Bl -tag -width Ds"]
    for row in rows:
        if len(row) < 3:
            continue
        spans = code_spans(row[0])
        if not spans:
            continue
        head = []
        for k, sp in enumerate(spans):
            words = sp.split(None, 1)
            if k:
                head.append(",")
            head.append("Ic " + esc_arg(words[0]))
            if len(words) > 1:
                head.append("Li " + " ".join(esc_arg(w) for w in words[1].split()))
        out.append(".It " + " ".join(head))
        out += inline(row[1])
        out.append(".Pp")
        out.append("Default:")
        out += inline(row[2])
        out.append(".br")
        out.append("Context: " + context + ".")
    out.append(".El")
    return out


def option_items(rows):
    out = [".Bl -tag -width Ds"]
    for flag, short, meaning, default in rows:
        spans = code_spans(flag)
        words = spans[0].split(None, 1)
        head = []
        if short:
            s = code_spans(short)[0].split(None, 1)
            head.append("Fl " + esc_arg(s[0][1:]))
            if len(s) > 1:
                head.append("Ar " + esc_arg(s[1]))
            head.append(",")
        head.append("Fl " + esc_arg(words[0][1:]))
        if len(words) > 1:
            head.append("Ar " + esc_arg(words[1]))
        out.append(".It " + " ".join(head))
        out += inline(meaning)
        if default:
            out.append(".Pp")
            out.append("Default:")
            out += inline(default)
    out.append(".El")
    return out


def handler_items(rows):
    out = [".Bl -tag -width Ds"]
    for name, serves in rows:
        spans = code_spans(name)
        words = spans[0].split(None, 1)
        head = "Cm " + esc_arg(words[0])
        if len(words) > 1:
            head += " Li " + " ".join(esc_arg(w) for w in words[1].split())
        out.append(".It " + head)
        out += inline(serves)
    out.append(".El")
    return out


def command_line_parts(sec):
    body = sec["Command line"]
    # The table, then paragraphs; "Signals:" starts the second part.
    after = []
    seen_table = False
    for line in body:
        if line.startswith("|"):
            seen_table = True
            continue
        if seen_table:
            after.append(line)
    paras = paragraphs(after)
    k = next(i for i, (kind, t) in enumerate(paras) if kind == "p" and t.startswith("Signals:"))
    return paras[:k], paras[k:]


PROCESS = "Process-wide directives (top level only)"
SITES = "Sites and locations"


def directives(readme):
    """[(name, context)] of every directive the README documents."""
    sec = sections(readme)
    out = []
    for title, context in ((PROCESS, "top"), (SITES, "site")):
        for row in table(sec[title]):
            for sp in code_spans(row[0]):
                out.append((sp.split()[0], context))
    return out


def render(readme, template):
    sec = sections(readme)
    notes, signals = command_line_parts(sec)
    parts = {
        "cli-options": lambda: option_items(table(sec["Command line"])),
        "cli-notes": lambda: para_lines(notes),
        "signals": lambda: para_lines(signals),
        "conf-format": lambda: para_lines(paragraphs(sec["Configuration file"])),
        "process-directives": lambda: directive_items(table(sec[PROCESS]), "top level"),
        "site-intro": lambda: para_lines(paragraphs(sec[SITES])),
        "site-directives": lambda: directive_items(
            table(sec[SITES]), "top level, server, location"),
        "handlers": lambda: handler_items(table(sec["Handlers"])),
        "site-rules": lambda: section_lines(sec["Site rules"]),
    }
    out = []
    for line in template.splitlines():
        m = re.match(r"^@([a-z-]+)@$", line)
        if m:
            if m.group(1) not in parts:
                raise SystemExit("mkman: unknown part @%s@" % m.group(1))
            out += parts[m.group(1)]()
        else:
            out.append(line)
    # mdoc: no blank lines, no .Pp right after a list start or before .El / .It
    clean = []
    for l in out:
        if l == ".Pp" and clean and clean[-1] in (".Pp",) :
            continue
        if l == "":
            continue
        clean.append(l)
    final = []
    for k, l in enumerate(clean):
        nxt = clean[k + 1] if k + 1 < len(clean) else ""
        if l == ".Pp" and (nxt.startswith(".Sh") or nxt.startswith(".Ss") or nxt == ".El" or
                           nxt.startswith(".It") or nxt.startswith(".Bl") or
                           (final and final[-1].startswith((".Sh", ".Ss")))):
            continue
        final.append(l)
    return "\n".join(final) + "\n"


def main(argv):
    if len(argv) == 3 and argv[1] == "--directives":
        for name, context in directives(open(argv[2], encoding="utf-8").read()):
            print(name, context)
        return 0
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    readme = open(argv[1], encoding="utf-8").read()
    template = open(argv[2], encoding="utf-8").read()
    text = render(readme, template)
    with open(argv[3], "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
