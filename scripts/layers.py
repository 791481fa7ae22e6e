#!/usr/bin/env python3
"""scripts/layers.py: check that references between the folders of src/ go down.

The layer table is src/layers.txt: the folders of src/ from the bottom layer
to the top, one layer per line, peers on the same line. An object file of
folder A may reference a global symbol defined in A or in a lower layer; a
reference into a higher layer is an upward edge, one into a peer a sideways
edge. Subfolders count as their top folder (service/ring is service).

It reads the objects of libcoexec.a in a build directory
(BUILD/CMakeFiles/coexec_static.dir/src/<folder>/...): `nm` gives the global
symbols each object defines and needs, `readelf -rW` where it refers to
them. Symbols no object of the library defines (libc, hwloc...) are ignored.
It prints the folder cycles (strongly connected components of the folder
graph), each upward or sideways edge with its number of references and up to
3 examples "file:function -> symbol" (the function when the build used
-ffunction-sections, else the file alone), and folders missing from the
table; then a summary line. Debug or Release, any flags but -flto.

usage:
  cmake --preset default && cmake --build --preset default
  scripts/layers.py build/default             # report; exit 0
  scripts/layers.py --enforce build/default   # exit 1 on any finding
  scripts/layers.py --summary build/default   # the summary line alone
  --table FILE        another table (default: src/layers.txt of this tree)
  --objects-root DIR  the objects under DIR, folder = first directory below
Exit 2 when it cannot check (no objects, no table, no nm/readelf); NM and
READELF in the environment name other tools. ctest runs it as the test
"layers" (tests/layers/), enforcing unless COEXEC_LAYERS_ENFORCE=OFF.
Objects of files no longer in src/ (left in a reused build directory) are
left out.
"""
import argparse, collections, os, re, subprocess, sys

DEFINED, UNDEFINED = set('BCDGRSTVWiu'), set('Uvw')     # nm -P types
SKIP = ('.debug', '.eh_frame', '.note', '.comment')     # not code or data


def fail(msg):
    print(f'layers: {msg}', file=sys.stderr)
    sys.exit(2)


def tool(var, name, *args, cwd):
    cmd = [os.environ.get(var) or name, *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd,
                              check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f'{cmd[0]}: {e} (Debian: binutils)')


def read_table(path):
    """folder -> layer number (peers share one)."""
    layer, level = {}, 0
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        fail(e)
    for words in (line.split('#')[0].split() for line in lines):
        for w in words:
            if w in layer:
                fail(f'{path}: {w} is listed twice')
            layer[w] = level
        level += bool(words)
    return layer


def function(section):
    """.text.foo, .text.unlikely.foo -> foo; .text -> ''; data: as named."""
    if section != '.text' and not section.startswith('.text.'):
        return section
    name = section[len('.text.'):]
    for part in ('unlikely', 'hot', 'startup', 'exit'):
        if name == part or name.startswith(part + '.'):
            name = name[len(part) + 1:]
    return name


def load(root, src=None):
    """defs: symbol -> object; needs: object -> {(function, symbol)}.
    With src, an object whose source file is gone (a file moved since the
    build directory was made) is left out."""
    objs = sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs if f.endswith('.o'))
    if src:
        stale = [o for o in objs if not os.path.exists(os.path.join(src, o[:-2]))]
        for o in stale:
            print(f'layers: {o} left out: {o[:-2]} is no longer in src/')
        objs = [o for o in objs if o not in stale]
    if not objs:
        fail(f'no object files under {root} (build the library first)')
    defs, undef = {}, collections.defaultdict(set)
    for line in tool('NM', 'nm', '-A', '-P', *objs, cwd=root):
        o, _, rest = line.partition(': ')
        p = rest.split()
        if len(p) >= 2 and p[1] in DEFINED:
            defs.setdefault(p[0], o)
        elif len(p) >= 2 and p[1] in UNDEFINED:
            undef[o].add(p[0])
    needs, o, section = {x: set() for x in objs}, objs[0], None
    for line in tool('READELF', 'readelf', '-rW', *objs, cwd=root):
        m = re.match(r"File: (.*)|Relocation section '\.rela?(\S*)'", line)
        if m:       # "File:" only when there are several objects
            o = m[1] or o
            section = m[2] if m[2] and not m[2].startswith(SKIP) else None
            continue
        p = line.split()
        if section and len(p) >= 5 and p[4] in undef[o] and p[4] in defs:
            needs[o].add((function(section), p[4]))
    if len(objs) > 1 and not any(needs.values()):
        fail(f'no references between the objects under {root} (-flto?)')
    return defs, needs


def cycles(graph):
    """The strongly connected components of more than one folder."""
    reach = {}
    for v in graph:                 # a dozen folders: plain reachability
        reach[v], todo = set(), [v]
        while todo:
            new = graph[todo.pop()] - reach[v]
            reach[v] |= new
            todo += new
    return sorted({tuple(sorted(w for w in reach[v] if v in reach[w]))
                   for v in graph if v in reach[v]} - {(v,) for v in graph})


def main():
    ap = argparse.ArgumentParser(description='Check the layer order of src/.')
    ap.add_argument('build', nargs='?', help='a build directory of libcoexec')
    ap.add_argument('--enforce', action='store_true', help='exit 1 on findings')
    ap.add_argument('--summary', action='store_true', help='one line only')
    ap.add_argument('--table', default=os.path.join(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))), 'src', 'layers.txt'))
    ap.add_argument('--objects-root', help='default: BUILD/CMakeFiles/'
                    'coexec_static.dir/src')
    a = ap.parse_args()
    if not (a.objects_root or a.build):
        ap.error('give a build directory or --objects-root')
    root = a.objects_root or os.path.join(a.build, 'CMakeFiles',
                                          'coexec_static.dir', 'src')
    layer = read_table(a.table)
    defs, needs = load(root, None if a.objects_root else
                       os.path.dirname(os.path.abspath(a.table)))

    top = lambda o: o.split(os.sep)[0]
    graph = {top(o): set() for o in needs}
    examples = collections.defaultdict(set)         # (A, B) -> references
    for o, refs in needs.items():
        for fn, sym in refs:
            if top(defs[sym]) != top(o):
                graph[top(o)].add(top(defs[sym]))
                examples[top(o), top(defs[sym])].add(
                    f'{o[:-2]}{":" + fn if fn else ""} -> {sym}')
    found = collections.defaultdict(list)           # kind -> [(A, B, refs)]
    for (x, y), refs in sorted(examples.items()):
        kind = ('unplaced' if x not in layer or y not in layer else
                'up' if layer[y] > layer[x] else
                'sideways' if layer[y] == layer[x] else None)
        if kind:
            found[kind].append((x, y, sorted(refs)))
    knots = cycles(graph)
    unlisted = sorted(f for f in graph if f not in layer)
    bad = bool(knots or unlisted or found)

    if not a.summary:
        print(f'layers: {len(needs)} objects in {len(graph)} folders under '
              f'{root}, table {a.table}')
        for k in knots:
            print('cycle: ' + ' '.join(k))
        for f in unlisted:
            print(f'not in the table: {f} (add it to {a.table})')
        for kind in ('up', 'sideways', 'unplaced'):
            for x, y, refs in found[kind]:
                print(f'{kind} {x} -> {y}: {len(refs)} refs')
                print(''.join(f'    {r}\n' for r in refs[:3]), end='')
    print(f'layers: {len(knots)} cycle(s), {len(found["up"])} upward edge(s) '
          f'({sum(len(r) for _, _, r in found["up"])} refs), '
          f'{len(found["sideways"])} sideways, {len(unlisted)} folder(s) not '
          'in the table' + (': FAIL' if bad and a.enforce else
                            ' (report only)' if bad else ': clean'))
    return 1 if bad and a.enforce else 0


if __name__ == '__main__':
    sys.exit(main())
