"""hdrdoc: reads the comment blocks of libcoexec's public headers.

Shared by scripts/gen_man.py (the section 3 manual pages) and
scripts/doxygen_filter.py (the HTML reference), so that both read the
headers the same way. Python 3, standard library only.

What it finds in a header:
  - the opening comment (the header's own description);
  - section markers, comments of the form /* ---- title ---- */, which split
    a header's calls into families;
  - every public function: a declaration that carries COEXEC_API. Its
    comment block is the block comment that ends on the line right above
    it, or the block of the declaration right above it when the two are
    written with no blank line between (one comment for a group of calls,
    such as coexec_cond_signal and coexec_cond_broadcast). A section
    marker is not a comment block;
  - typedefs (their name, and the lines that define them).

A comment block's text is split into its description and its labelled
parts: "Context:", "Switches:", "Returns:", "Undefined:", or a joint label
such as "Context and Switches:" or "Context, Switches and Returns:". A
label starts a line or a sentence.
"""
import os
import re

API = "COEXEC_API"
# Macros that stand alone on a line with no semicolon; blanked out before
# the statements are cut.
BARE_MACROS = ("COEXEC_BEGIN_DECLS", "COEXEC_END_DECLS")
# Attribute macros dropped from a prototype (COEXEC_NODISCARD is kept: it
# tells the reader that ignoring the result draws a warning).
DROPPED = (API,)

_SECTION = re.compile(r"^-{2,}\s*(.*?)\s*-*$", re.S)
_LABEL_WORD = r"(?:Context|Switches|Returns|Undefined|[Cc]ontext|[Ss]witches|[Rr]eturns|[Ee]rrors)"
_LABEL = re.compile(
    r"(?:(?<=^)|(?<=\n)|(?<=[.;]\s)|(?<=[.;]\s\s))"
    r"((?:Context|Switches|Returns|Undefined)"
    r"(?:(?:,\s*|\s+and\s+)" + _LABEL_WORD + r")*):\s*")


class HeaderError(Exception):
    pass


class Comment:
    def __init__(self, start, end, raw, trailing, span=None):
        self.span = span          # (offset of /*, offset after */)
        self.start = start        # first line (1-based)
        self.end = end            # last line
        self.raw = raw            # the text between /* and */
        self.trailing = trailing  # code stands before it on its first line
        self.text = clean(raw)
        m = _SECTION.match(self.text)
        self.section = m.group(1) if m else None


class Stmt:
    """Code up to a semicolon (or a closing brace at depth 0)."""

    def __init__(self, start, end, text, pos=None):
        self.pos = pos  # offset of its first character
        self.start = start
        self.end = end
        self.text = text


class Directive:
    def __init__(self, start, end, text):
        self.start = start
        self.end = end
        self.text = text


def clean(raw):
    """The text of a block comment without its frame: leading ' * ' (or
    the alignment spaces of a continued member comment) removed, relative
    indentation kept."""
    lines = raw.split("\n")
    out = []
    for i, line in enumerate(lines):
        s = line.rstrip()
        m = re.match(r"^\s*\* ?(.*)$", s)
        if i == 0:
            s = s.strip()
        elif m:
            s = m.group(1)
        else:
            s = s.strip()
        out.append(s)
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def tokenize(src):
    """Cuts a header into comments, preprocessor directives and statements,
    in order, each with its line range."""
    for name in BARE_MACROS:
        src = re.sub(r"\b%s\b" % name, " " * len(name), src)
    items = []
    i, n, line = 0, len(src), 1
    code, code_start, code_pos, depth = [], None, None, 0
    at_line_start = True

    def flush_code(end_line):
        nonlocal code, code_start, code_pos
        text = "".join(code).strip()
        if text:
            items.append(Stmt(code_start, end_line, text, code_pos))
        code, code_start, code_pos = [], None, None

    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise HeaderError("line %d: unterminated comment" % line)
            raw = src[i + 2:j]
            trailing = bool(src[src.rfind("\n", 0, i) + 1:i].strip())
            end = line + raw.count("\n")
            items.append(Comment(line, end, raw, trailing, (i, j + 2)))
            line = end
            i = j + 2
            at_line_start = False
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "#" and at_line_start and not "".join(code).strip():
            start = line
            j = i
            while True:
                k = src.find("\n", j)
                if k < 0:
                    k = n
                if src[j:k].rstrip().endswith("\\") and k < n:
                    line += 1
                    j = k + 1
                    continue
                break
            items.append(Directive(start, line, src[i:k]))
            i = k
            continue
        if c == "\n":
            line += 1
            at_line_start = True
            if code:
                code.append(c)
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
            if code_start is None:
                code_start, code_pos = line, i
        elif c in " \t" and at_line_start:
            i += 1
            continue
        if code_start is not None:
            code.append(c)
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                # A function body ends at its brace; a struct, union or
                # enum goes on to its semicolon.
                head = "".join(code).split("{", 1)[0]
                if "(" in head and "=" not in head:
                    flush_code(line)
        elif c == ";" and depth == 0:
            flush_code(line)
        i += 1
    flush_code(line)
    return items


def squeeze(text):
    """A declaration on one line: runs of white space folded, none inside
    the parentheses' edges."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"\s+\)", ")", text)
    return text


class Function:
    def __init__(self, header, stmt, doc, section, group_head):
        self.header = header
        self.stmt = stmt
        self.doc = doc                # the Comment
        self.section = section        # title of the section marker, or None
        self.group_head = group_head  # the first Function of its comment
        proto = squeeze(stmt.text)
        for word in DROPPED:
            proto = re.sub(r"\b%s\b\s*" % word, "", proto)
        self.prototype = proto
        m = re.match(r"^(.*?)\b([A-Za-z_]\w*)\s*\(", proto)
        if not m:
            raise HeaderError("%s:%d: cannot find the name in '%s'"
                              % (header.path, stmt.start, proto))
        self.name = m.group(2)
        self.ret = m.group(1).strip()
        self.params = proto[m.end():].rstrip(";").strip()
        assert self.params.endswith(")")
        self.params = self.params[:-1]

    @property
    def line(self):
        return self.stmt.start


class Typedef:
    def __init__(self, name, start, end, doc):
        self.name = name
        self.start = start
        self.end = end
        self.doc = doc  # the Comment right above, or None


def typedef_name(text):
    """The name a typedef statement defines."""
    t = squeeze(text)
    m = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", t)
    if m and "{" not in t:
        return m.group(1)
    m = re.search(r"([A-Za-z_]\w*)\s*;$", t)
    return m.group(1) if m else None


class Header:
    def __init__(self, path, relname):
        self.path = path
        self.relname = relname  # as included: coexec/sync.h, coexec.h
        with open(path, encoding="utf-8") as f:
            self.src = f.read()
        self.lines = self.src.split("\n")
        self.items = tokenize(self.src)
        self.opening = None
        if self.items and isinstance(self.items[0], Comment) and self.items[0].start <= 2:
            self.opening = self.items[0]
        self.functions = []
        self.typedefs = []
        self.missing = []  # (line, text) of public declarations with no comment
        self._scan()

    def _scan(self):
        section = None
        prev = None
        for item in self.items:
            if isinstance(item, Comment) and item.section is not None:
                section = item.section
            if isinstance(item, Stmt):
                words = re.findall(r"\b\w+\b", item.text)
                if API in words:
                    self._function(item, prev, section)
                elif words and words[0] == "typedef":
                    name = typedef_name(item.text)
                    if name:
                        doc = prev if (isinstance(prev, Comment) and not prev.trailing
                                       and prev.section is None
                                       and prev.end >= item.start - 1) else None
                        self.typedefs.append(Typedef(name, item.start, item.end, doc))
            prev = item

    def _function(self, stmt, prev, section):
        adjacent = prev is not None and prev.end >= stmt.start - 1
        doc, head = None, None
        if adjacent and isinstance(prev, Comment) and not prev.trailing \
                and prev.section is None and prev is not self.opening:
            doc = prev
        elif adjacent and isinstance(prev, Stmt) and self.functions \
                and self.functions[-1].stmt is prev:
            doc = self.functions[-1].doc
            head = self.functions[-1].group_head
        if doc is None:
            self.missing.append((stmt.start, squeeze(stmt.text)))
            return
        f = Function(self, stmt, doc, section, None)
        f.group_head = head or f
        self.functions.append(f)

    def source(self, start, end):
        return "\n".join(self.lines[start - 1:end])


def read_headers(include_dir):
    """Every public header below include_dir: coexec.h, then coexec/*.h in
    name order."""
    out = []
    top = os.path.join(include_dir, "coexec.h")
    if os.path.exists(top):
        out.append(Header(top, "coexec.h"))
    sub = os.path.join(include_dir, "coexec")
    for name in sorted(os.listdir(sub)):
        if name.endswith(".h"):
            out.append(Header(os.path.join(sub, name), "coexec/" + name))
    return out


def split_labels(text):
    """(description, [(label, body), ...]) of a comment block's text."""
    parts = []
    pos = 0
    desc = None
    for m in _LABEL.finditer(text):
        chunk = text[pos:m.start()].strip()
        if desc is None:
            desc = chunk
        else:
            parts[-1] = (parts[-1][0], chunk)
        parts.append((m.group(1), ""))
        pos = m.end()
    tail = text[pos:].strip()
    if desc is None:
        return tail, []
    parts[-1] = (parts[-1][0], tail)
    return desc, parts


def label_kinds(label):
    """The set of {'context', 'switches', 'returns', 'undefined'} a label
    speaks of ('errors' counts as returns)."""
    kinds = set()
    for w in re.findall(r"[A-Za-z]+", label.lower()):
        if w == "errors":
            w = "returns"
        if w in ("context", "switches", "returns", "undefined"):
            kinds.add(w)
    return kinds


def paragraphs(text):
    """Blocks of a comment's text: ('para', text), ('pre', lines) for
    indented lines (examples, tables), ('list', [items]) for ' - ' items."""
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if re.match(r"^\s*- ", line):
            items = []
            while i < len(lines) and lines[i].strip():
                if re.match(r"^\s*- ", lines[i]):
                    items.append(re.sub(r"^\s*- ", "", lines[i]).strip())
                elif items:
                    items[-1] += " " + lines[i].strip()
                i += 1
            blocks.append(("list", items))
            continue
        if line.startswith("  "):
            pre = []
            while i < len(lines) and (lines[i].startswith("  ") or not lines[i].strip()):
                pre.append(lines[i])
                i += 1
            while pre and not pre[-1].strip():
                pre.pop()
            indent = min(len(p) - len(p.lstrip()) for p in pre if p.strip())
            blocks.append(("pre", [p[indent:] for p in pre]))
            continue
        para = []
        while i < len(lines) and lines[i].strip() and not lines[i].startswith("  ") \
                and not re.match(r"^\s*- ", lines[i]):
            para.append(lines[i].strip())
            i += 1
        blocks.append(("para", " ".join(para)))
    return blocks
