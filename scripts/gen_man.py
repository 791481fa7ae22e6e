#!/usr/bin/env python3
"""Writes libcoexec's section 3 manual pages from the public headers.

usage: scripts/gen_man.py [--out DIR] [--strict] [--list] [INCLUDE_DIR]

INCLUDE_DIR defaults to the include/ folder beside scripts/. With --out,
the pages go to DIR/man3/ (pages there that this run did not write are
removed); without it nothing is written and the headers are only checked.

Pages:
  coexec(3)       the overview: the headers, the families' pages, the
                  error codes (from COEXEC_ERROR_TABLE) and the
                  environment variables (from coexec/runtime.h)
  one per family  a family is the calls of one header, or of one section
                  of it (a marker comment /* ---- title ---- */); FAMILIES
                  below names its page. The page has NAME, LIBRARY,
                  SYNOPSIS (the header, every prototype as declared, the
                  pkg-config line), DESCRIPTION (each call's comment block,
                  and the types its prototypes use), CONTEXT and RETURN
                  VALUE (the comment's "Context:", "Switches:" and
                  "Returns:" parts), NOTES (the header's opening comment)
                  and SEE ALSO (the header's other families, the pages of
                  the calls it mentions, coexec(3))
  one per call    a one-line ".so man3/FAMILY.3" page, so that
                  `man coexec_mutex_unlock` shows the mutex family's page

Exit status 1, with one line per call, when a public function (a
declaration with COEXEC_API) has no comment block right above it; with
--strict also when a comment block says nothing of Context or Switches;
and when a header or section has no entry in FAMILIES (or an entry names
none). --list prints "function page" for every public function.
"""
import argparse
import os
import re
import sys

import hdrdoc

# (header, section title or None) -> (page, what the family is)
FAMILIES = {
    ("coexec/error.h", None): ("coexec_error", "error codes: their names and descriptions"),
    ("coexec/version.h", None): ("coexec_version", "the version of the linked library"),
    ("coexec/runtime.h", None): ("coexec_runtime", "start, configure and stop the runtime"),
    ("coexec/pool.h", None): ("coexec_pool", "pools of ready units"),
    ("coexec/sched.h", None): ("coexec_sched", "schedulers: built-in kinds, user schedulers, stacking"),
    ("coexec/sched.h", "for the run function of a scheduler"):
        ("coexec_sched_loop", "calls for the run loop of a user-defined scheduler"),
    ("coexec/xstream.h", None): ("coexec_xstream", "execution streams: OS threads pinned to cores"),
    ("coexec/thread.h", "ULTs"): ("coexec_thread", "user-level threads (ULTs)"),
    ("coexec/thread.h", "either kind of unit"):
        ("coexec_unit", "attributes and handles common to ULTs and tasklets"),
    ("coexec/thread.h", "tasklets"): ("coexec_tasklet", "stackless tasklets"),
    ("coexec/waker.h", None): ("coexec_waker", "park a unit, and make it runnable again"),
    ("coexec/poller.h", None): ("coexec_poller", "progress pollers: the schedulers test outside work and wake its units"),
    ("coexec/mpi.h", "the engine"): ("coexec_mpi", "MPI requests that park units: the progress engine (libcoexec-mpi)"),
    ("coexec/mpi.h", "waits"): ("coexec_mpi_wait", "MPI waits that park a ULT, and their tasklet polls (libcoexec-mpi)"),
    ("coexec/mpi.h", "blocking calls that park"):
        ("coexec_mpi_send", "MPI blocking calls that park a ULT: point to point and collectives (libcoexec-mpi)"),
    ("coexec/time.h", None): ("coexec_time", "the runtime's clock, and sleeping"),
    ("coexec/eventual.h", "eventuals"): ("coexec_eventual", "single-assignment values that units wait for"),
    ("coexec/eventual.h", "futures"): ("coexec_future", "futures of N values, with a completion callback"),
    ("coexec/channel.h", None): ("coexec_channel", "bounded MPMC channels of fixed-size messages"),
    ("coexec/sync.h", "mutex"): ("coexec_mutex", "ULT-aware mutexes"),
    ("coexec/sync.h", "condition variable"): ("coexec_cond", "ULT-aware condition variables"),
    ("coexec/sync.h", "reader-writer lock"): ("coexec_rwlock", "ULT-aware reader-writer locks"),
    ("coexec/sync.h", "barrier"): ("coexec_barrier", "ULT-aware barriers"),
    ("coexec/sync.h", "xstream barrier"): ("coexec_xstream_barrier", "barriers that block whole OS threads"),
    ("coexec/key.h", None): ("coexec_key", "keys: ULT-local storage"),
    ("coexec/service.h", "offloaded calls and requests"):
        ("coexec_service", "the service stream: run blocking calls off the compute streams"),
    ("coexec/service.h", "POSIX calls"): ("coexec_posix", "POSIX calls offloaded to the service stream"),
    ("coexec/fj.h", None): ("coexec_fj", "fork-join tasks, parallel loops and reductions"),
    ("coexec/fj.h", "what the macros expand to; not for direct use"):
        ("coexec_fj_internal", "what the fork-join macros expand to; not for direct use"),
    ("coexec/stats.h", None): ("coexec_stats", "per-stream counters"),
    ("coexec/info.h", None): ("coexec_info", "dump the streams and the blocked units"),
    ("coexec/tool.h", None): ("coexec_tool", "events for tools, and the Chrome trace"),
}

# Types of coexec/types.h defined as structs are the handles coexec(3)
# describes once; their definitions are not repeated on every page.
HANDLE_HEADER = "coexec/types.h"
WIDTH = 72  # columns of a synopsis line (man indents it by 7 of 80)


class Family:
    def __init__(self, page, summary, header, section):
        self.page = page
        self.summary = summary
        self.header = header
        self.section = section
        self.functions = []

    def entries(self):
        """The comment blocks in order: [(block head, [functions])]."""
        out = []
        for f in self.functions:
            if out and out[-1][0] is f.group_head:
                out[-1][1].append(f)
            else:
                out.append((f.group_head, [f]))
        return out


# ---- roff ------------------------------------------------------------------

def esc(text):
    """Text made safe for roff: backslashes, hyphens (as \\- so that code
    copies right), and a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text, flags=re.M)


def inline(text, known):
    """esc(text) with the names of known functions in bold."""
    out = []
    pos = 0
    for m in re.finditer(r"\bcoexec_\w+\b", text):
        if m.group(0) in known:
            out.append(esc(text[pos:m.start()]))
            out.append("\\fB%s\\fP" % esc(m.group(0)))
            pos = m.end()
    out.append(esc(text[pos:]))
    return "".join(out)


def blocks_roff(text, known):
    """A comment's text as roff paragraphs, lists and literal blocks."""
    out = []
    for kind, body in hdrdoc.paragraphs(text):
        if kind == "para":
            out += [".PP", inline(body, known)]
        elif kind == "list":
            for item in body:
                out += [".IP \\(bu 2", inline(item, known)]
        else:
            out += [".PP", ".RS 4", ".nf"] + [esc(l) for l in body] + [".fi", ".RE"]
    return out


def split_params(params):
    out, depth, cur = [], 0, ""
    for c in params:
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += c == "("
        depth -= c == ")"
        cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def param_runs(p):
    """[(font, text)] of one parameter: its type bold, its name italic."""
    m = re.search(r"\(\s*\*\s*(\w+)\s*\)", p)
    if m:
        return [("B", p[:m.start(1)]), ("I", m.group(1)), ("B", p[m.end(1):])]
    m = re.search(r"(\w+)(\s*\[[^\]]*\])?$", p)
    if p in ("void", "...") or not m or m.start() == 0:
        return [("B", p)]
    return [("B", p[:m.start(1)]), ("I", m.group(1)), ("B", p[m.end(1):])]


def prototype_lines(f):
    """The prototype as synopsis lines no wider than WIDTH where the
    parameters allow: [[(font, text)]]."""
    head = f.ret + ("" if f.ret.endswith("*") else " ") + f.name + "("
    lines = [[("B", head)]]
    if len(head) + len(f.params) + 2 > WIDTH and len(head) > 40:
        lines = [[("B", f.ret)], [("B", f.name + "(")]]
    indent = sum(len(t) for _, t in lines[-1])
    params = split_params(f.params)
    for i, p in enumerate(params):
        runs = param_runs(p) + [("B", ", " if i + 1 < len(params) else ");")]
        width = sum(len(t) for _, t in runs)
        used = sum(len(t) for _, t in lines[-1])
        if used + width > WIDTH and used > indent:
            lines[-1][-1] = (lines[-1][-1][0], lines[-1][-1][1].rstrip())
            lines.append([("B", " " * indent)])
        lines[-1] += runs
    if not params:
        lines[-1].append(("B", ");"))
    return lines


def runs_roff(runs):
    return "".join("\\f%s%s\\fP" % (font, esc(text)) for font, text in runs if text)


# ---- pages -----------------------------------------------------------------

def th(page, version):
    # No hyphenation (names such as coexec_mutex_lock_timed must not
    # break), ragged right.
    return ['.TH %s 3 "" "libcoexec %s" "libcoexec Manual"' % (page.upper(), version),
            ".nh", ".ad l"]


# Headers of the libraries built beside libcoexec: (library, pkg-config
# package). Their pages name that library and include the header itself.
OTHER_LIBS = {
    "coexec/mpi.h": ("libcoexec-mpi", "coexec-mpi"),
}


def library_section(relname=None):
    lib, pkg = OTHER_LIBS.get(relname, ("libcoexec", "coexec"))
    flag = "-l" + lib[3:]
    return [".SH LIBRARY",
            "%s (\\fI%s\\fP; \\fIpkg\\-config \\-\\-cflags \\-\\-libs %s\\fP)"
            % (esc(lib), esc(flag), esc(pkg))]


def see_also(pages):
    out = [".SH SEE ALSO"]
    pages = sorted(set(pages))
    for i, p in enumerate(pages):
        out.append(".BR %s (3)%s" % (esc(p), "," if i + 1 < len(pages) else ""))
    return out


def opening_body(header):
    """The header's opening comment without its 'coexec/x.h: ' prefix."""
    return re.sub(r"^\S+\.h:\s*", "", header.opening.text if header.opening else "")


def first_sentence(header):
    """The header's opening line, without its 'coexec/x.h: ' prefix."""
    text = " ".join(opening_body(header).split("\n\n")[0].split())
    m = re.match(r"(.*?[.])(\s|$)", text)
    return m.group(1) if m else text


def types_used(fam, typedefs):
    """The typedefs the family's prototypes name, then those their
    definitions name (handles of coexec/types.h left out), in order."""
    seen, order = set(), []

    def visit(name):
        if name in seen or name not in typedefs:
            return
        header, td = typedefs[name]
        seen.add(name)
        body = header.source(td.start, td.end)
        if header.relname == HANDLE_HEADER and "struct" in body:
            return
        order.append(name)
        for ref in re.findall(r"\b\w+_t\b", body):
            visit(ref)

    for f in fam.functions:
        for ref in re.findall(r"\b\w+_t\b|\bcoexec_\w+_fn\b", f.prototype):
            visit(ref)
    return order


def group_title(group, fmt):
    """The names of a comment block's functions; past three, the first and
    a count (the synopsis lists them all)."""
    if len(group) <= 3:
        return ", ".join(fmt % esc(f.name) for f in group)
    return (fmt % esc(group[0].name)) + " and the %d calls after it in the synopsis" % (len(group) - 1)


def family_page(fam, families, version, typedefs, page_of, known):
    h = fam.header
    names = [f.name for f in fam.functions]
    out = [".\\\" Generated by scripts/gen_man.py from include/%s: do not edit." % h.relname]
    out += th(fam.page, version)
    out += [".SH NAME", "%s \\- %s" % (", ".join(esc(n) for n in names), esc(fam.summary))]
    out += library_section(h.relname)
    if h.relname in OTHER_LIBS:
        out += [".SH SYNOPSIS", ".nf", ".B #include <%s>" % esc(h.relname), ".PP", ".nf"]
    else:
        out += [".SH SYNOPSIS", ".nf", ".B #include <coexec.h>",
                ".fi", "(or \\fB#include <%s>\\fP alone)" % esc(h.relname), ".PP", ".nf"]
    for head, group in fam.entries():
        for f in group:
            out += [runs_roff(r) for r in prototype_lines(f)]
        out.append("")
    if out[-1] == "":
        out.pop()
    out += [".fi", ".PP", "Compile and link with",
            ".IR \"cc app.c $(pkg\\-config \\-\\-cflags \\-\\-libs coexec)\" ."]

    out.append(".SH DESCRIPTION")
    used = types_used(fam, typedefs)
    if used:
        out += [".SS Types", ".nf", ".RS 4"]
        for i, name in enumerate(used):
            th_, td = typedefs[name]
            start = td.doc.start if td.doc else td.start
            if i:
                out.append("")
            out += [esc(l) for l in th_.source(start, td.end).split("\n")]
        out += [".RE", ".fi"]
    context, returns, undefined = [], [], []
    for head, group in fam.entries():
        desc, parts = hdrdoc.split_labels(head.doc.text)
        out += [".SS \"%s\"" % esc(group_title(group, "%s()"))] + blocks_roff(desc, known)[1:]
        tag = [".TP", group_title(group, "\\fB%s\\fP()")]
        ctx = [p for p in parts if hdrdoc.label_kinds(p[0]) & {"context", "switches"}]
        ret = [p for p in parts if "returns" in hdrdoc.label_kinds(p[0])]
        und = [p for p in parts if "undefined" in hdrdoc.label_kinds(p[0])]
        if ctx:
            context += tag + [inline(" ".join("%s: %s" % p for p in ctx), known)]
        if ret:
            text = " ".join(b if l == "Returns" else "%s: %s" % (l, b) for l, b in ret)
            returns += tag + [inline(text, known)]
        if und:
            undefined += tag + [inline(" ".join(b for _, b in und), known)]
    if context:
        out += [".SH CONTEXT",
                "Who may call each function (a ULT, a tasklet, a scheduler's loop, "
                "an external thread), and whether the call may switch the caller out."] + context
    if returns:
        out += [".SH RETURN VALUE",
                "Fallible calls return \\fBCOEXEC_OK\\fP (0) or a negative error code "
                "(see \\fBcoexec_error\\fP(3)); the library never sets \\fIerrno\\fP."] + returns
    if undefined:
        out += [".SH \"UNDEFINED BEHAVIOR\""] + undefined
    if h.opening:
        out += [".SH NOTES", "From \\fI<%s>\\fP:" % esc(h.relname)]
        out += blocks_roff(opening_body(h), known)
    refs = {page_of[n] for n in _mentions(fam) if n in page_of}
    refs |= {other.page for other in families if other.header is h}
    refs.discard(fam.page)
    refs.add("coexec")
    out += see_also(refs)
    out.append("The header \\fI<%s>\\fP." % esc(h.relname))
    return "\n".join(out) + "\n"


def _mentions(fam):
    text = " ".join(f.doc.text for f in fam.functions)
    if fam.header.opening:
        text += " " + fam.header.opening.text
    return set(re.findall(r"\bcoexec_\w+\b", text))



def error_table(headers):
    for h in headers:
        if h.relname == "coexec/error.h":
            m = re.search(r"#define COEXEC_ERROR_TABLE\(X\)(.*?)\n\n", h.src, re.S)
            if m:
                return re.findall(r'X\((\w+),\s*([^,]+),\s*"([^"]*)"\)', m.group(1))
    return []


def environment(headers):
    """The indented table of COEXEC_* variables in coexec/runtime.h's
    opening comment."""
    for h in headers:
        if h.relname == "coexec/runtime.h" and h.opening:
            for kind, body in hdrdoc.paragraphs(h.opening.text):
                if kind == "pre" and body and body[0].startswith("COEXEC_"):
                    return body
    return []


def overview_page(headers, families, version, known):
    top = next(h for h in headers if h.relname == "coexec.h")
    out = [".\\\" Generated by scripts/gen_man.py from include/: do not edit."]
    out += th("coexec", version)
    out += [".SH NAME", "coexec \\- %s" % esc(first_sentence(top).rstrip(".").replace("libcoexec, ", ""))]
    out += library_section()
    out += [".SH SYNOPSIS", ".nf", ".B #include <coexec.h>", ".PP",
            ".B cc app.c $(pkg\\-config \\-\\-cflags \\-\\-libs coexec)",
            ".PP", "CMake:",
            ".B find_package(coexec %s REQUIRED)" % esc(".".join(version.split(".")[:2])),
            ".B target_link_libraries(app PRIVATE coexec::coexec)",
            ".fi"]
    out += [".SH DESCRIPTION"] + blocks_roff(opening_body(top), known)[1:]
    out += [".PP", "Every function has a page, shared by its family; each page gives the "
            "exact prototypes, what each call does, from which context it may be "
            "called, whether it may switch, and what it returns."]
    out += [".SS Headers and pages"]
    for h in headers:
        if h.relname == "coexec.h":
            continue
        pages = [f.page for f in families if f.header is h]
        out += [".TP", "\\fI<%s>\\fP" % esc(h.relname), inline(first_sentence(h), known)]
        if pages:
            out[-1] += " " + ", ".join("\\fB%s\\fP(3)" % esc(p) for p in pages) + "."
    for h in headers:
        if h.relname == HANDLE_HEADER and h.opening:
            out += [".SS Handles"] + blocks_roff(opening_body(h), known)[1:]
    table = error_table(headers)
    if table:
        out += [".SH ERRORS",
                "Fallible calls return \\fBCOEXEC_OK\\fP (0) or one of these negative "
                "codes; \\fBcoexec_strerror\\fP(3) and \\fBcoexec_err_name\\fP(3) "
                "describe them. Codes with a POSIX name are the negated \\fIerrno\\fP value."]
        for name, value, desc in table:
            out += [".TP", "\\fBCOEXEC_%s\\fP (%s)" % (esc(name), esc(value.strip())), esc(desc)]
    env = environment(headers)
    if env:
        out += [".SH ENVIRONMENT",
                "\\fBcoexec_init\\fP(3) applies these on top of the configuration it is "
                "given (see \\fBcoexec_runtime\\fP(3)):", ".PP", ".RS 4", ".nf"]
        out += [esc(l) for l in env] + [".fi", ".RE"]
    out += see_also([f.page for f in families])
    return "\n".join(out) + "\n"


# ---- driver ----------------------------------------------------------------

def version_of(include_dir):
    with open(os.path.join(include_dir, "coexec", "version.h"), encoding="utf-8") as f:
        src = f.read()
    return ".".join(re.search(r"#define COEXEC_VERSION_%s (\d+)" % p, src).group(1)
                    for p in ("MAJOR", "MINOR", "PATCH"))


def build(include_dir, strict):
    """(headers, families, errors)."""
    headers = hdrdoc.read_headers(include_dir)
    errors = []
    families, by_key = [], {}
    for h in headers:
        for line, text in h.missing:
            errors.append("%s:%d: public function with no comment block: %s"
                          % (h.path, line, text))
        for f in h.functions:
            key = (h.relname, f.section)
            if key not in FAMILIES:
                errors.append("%s:%d: %s: no page for header %s, section %r: add it "
                              "to FAMILIES in scripts/gen_man.py"
                              % (h.path, f.line, f.name, h.relname, f.section))
                continue
            if key not in by_key:
                page, summary = FAMILIES[key]
                by_key[key] = Family(page, summary, h, f.section)
                families.append(by_key[key])
            by_key[key].functions.append(f)
            if strict and f.group_head is f:
                kinds = set()
                for label, _ in hdrdoc.split_labels(f.doc.text)[1]:
                    kinds |= hdrdoc.label_kinds(label)
                if not {"context", "switches"} <= kinds:
                    errors.append("%s:%d: %s: the comment block says nothing of %s"
                                  % (h.path, f.line, f.name, " or ".join(
                                      sorted({"Context", "Switches"} - {k.title() for k in kinds}))))
    for key in FAMILIES:
        if key not in by_key:
            errors.append("scripts/gen_man.py: FAMILIES entry %r names no public function" % (key,))
    names = {f.name for fam in families for f in fam.functions}
    for fam in families:
        if fam.page in names and fam.page not in {f.name for f in fam.functions}:
            errors.append("page %s of %s is also the name of a function of another family"
                          % (fam.page, fam.header.relname))
    return headers, families, errors


def write_pages(outdir, headers, families, version):
    mandir = os.path.join(outdir, "man3")
    os.makedirs(mandir, exist_ok=True)
    page_of = {f.name: fam.page for fam in families for f in fam.functions}
    known = set(page_of)
    typedefs = {td.name: (h, td) for h in headers for td in h.typedefs}
    pages = {"coexec": overview_page(headers, families, version, known)}
    for fam in families:
        pages[fam.page] = family_page(fam, families, version, typedefs, page_of, known)
    for name, page in page_of.items():
        if name != page:
            pages[name] = ".so man3/%s.3\n" % page
    for name, text in pages.items():
        path = os.path.join(mandir, name + ".3")
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old != text:  # untouched files keep their time stamps
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    for name in os.listdir(mandir):
        if name.endswith(".3") and name[:-2] not in pages:
            os.remove(os.path.join(mandir, name))
    return len(pages)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("include_dir", nargs="?", default=os.path.join(here, "..", "include"))
    ap.add_argument("--out", help="write DIR/man3/*.3")
    ap.add_argument("--strict", action="store_true",
                    help="also fail on a comment block without Context or Switches")
    ap.add_argument("--list", action="store_true", help="print 'function page' lines")
    args = ap.parse_args()
    try:
        headers, families, errors = build(args.include_dir, args.strict)
    except hdrdoc.HeaderError as e:
        print("gen_man.py: %s" % e, file=sys.stderr)
        return 1
    if errors:
        for e in errors:
            print("gen_man.py: error: %s" % e, file=sys.stderr)
        print("gen_man.py: %d error(s): every public function needs a comment block "
              "right above its declaration" % len(errors), file=sys.stderr)
        return 1
    nfun = sum(len(f.functions) for f in families)
    if args.list:
        for fam in families:
            for f in fam.functions:
                print(f.name, fam.page)
    if args.out:
        n = write_pages(args.out, headers, families, version_of(args.include_dir))
        print("gen_man.py: %d functions in %d families: %d pages in %s"
              % (nfun, len(families), n, os.path.join(args.out, "man3")))
    elif not args.list:
        print("gen_man.py: %d functions in %d families, all documented" % (nfun, len(families)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
