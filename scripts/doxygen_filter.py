#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER for libcoexec's public headers (docs/Doxyfile.in).

usage: scripts/doxygen_filter.py HEADER      (prints the filtered header)

The headers keep plain /* */ comment blocks; this turns them into the
Doxygen comments they stand for, reading them as scripts/gen_man.py does
(scripts/hdrdoc.py), so the HTML reference and the manual pages say the
same:
  - the header's opening comment documents the file (@file; coexec.h's is
    also the main page);
  - a public function's comment block becomes its documentation, its
    "Context:", "Switches:", "Undefined:" parts paragraphs of their own and
    its "Returns:" part the return value; each further function of a group
    comment (coexec_cond_signal and coexec_cond_broadcast) copies the
    first's (@copydoc);
  - a comment on the line right above a type, field, enumerator or macro
    documents it; a comment after one on the same line documents it too
    (/**<);
  - section markers (/* ---- title ---- */) and comments standing apart
    stay plain comments.
Only comments change; the code reaches Doxygen as written.
"""
import os
import re
import sys

import hdrdoc


def doc_block(text):
    return "/**\n" + "\n".join((" * " + l).rstrip() for l in text.split("\n")) + "\n */"


def function_doc(text):
    desc, parts = hdrdoc.split_labels(text)
    lines = [desc] if desc else []
    for label, body in parts:
        if label == "Returns":
            lines.append("@return " + body)
        else:
            lines += ["@par %s:" % label, body]
    return doc_block("\n".join(lines))


def documents_next_line(h, comment):
    """A comment alone on its lines, with code on the very next line."""
    after = h.src[comment.span[1]:h.src.find("\n", comment.span[1])]
    if after.strip() or comment.end >= len(h.lines):
        return False
    nxt = h.lines[comment.end].strip()
    return bool(nxt) and not nxt.startswith(("/*", "}"))


def relname(path):
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    name = os.path.basename(path)
    return "coexec/" + name if parent == "coexec" else name


def filtered(path):
    h = hdrdoc.Header(path, relname(path))
    docs = {id(f.doc): f for f in h.functions if f.group_head is f}
    edits = []  # (start offset, end offset, replacement)
    for item in h.items:
        if isinstance(item, hdrdoc.Comment):
            a, b = item.span
            if item is h.opening:
                text = "@file\n" + item.text
                if h.relname == "coexec.h":
                    text = "@mainpage libcoexec\n" + item.text
                    edits.append((a, b, doc_block(text) + " /** @file */"))
                else:
                    edits.append((a, b, doc_block(text)))
            elif item.section is not None:
                continue
            elif id(item) in docs:
                edits.append((a, b, function_doc(item.text)))
            elif item.trailing:
                edits.append((a, a + 2, "/**<"))
            elif documents_next_line(h, item):
                edits.append((a, a + 2, "/**"))
    for f in h.functions:
        if f.group_head is not f:
            pos = f.stmt.pos
            edits.append((pos, pos, "/** @copydoc %s */ " % f.group_head.name))
    src = h.src
    for a, b, text in sorted(edits, reverse=True):
        src = src[:a] + text + src[b:]
    return src


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    try:
        sys.stdout.write(filtered(sys.argv[1]))
    except hdrdoc.HeaderError as e:
        print("doxygen_filter.py: %s: %s" % (sys.argv[1], e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
