#!/usr/bin/env python3
"""tests/layers/selftest.py: scripts/layers.py on three tiny objects.

usage: selftest.py LAYERS_PY CC WORKDIR

Compiles lo/lo.c, hi/hi.c (calls down into lo) and lo/up.c (calls up into
hi) under WORKDIR/bad, copies the first two to WORKDIR/clean, writes a
table "lo, hi" and checks: the clean set passes --enforce; report mode
names the bad set's upward call and its cycle and exits 0; --enforce fails
it, and with --summary prints one line; with "lo hi" as peers the clean
set's call is a sideways edge; a folder missing from the table fails.
"""
import os, shutil, subprocess, sys

SOURCES = {
    'lo/lo.c': 'int lo_value(int x) { return x + 1; }\n',
    'hi/hi.c': 'int lo_value(int);\nint hi_value(int x) { return lo_value(x) * 2; }\n',
    'lo/up.c': 'int hi_value(int);\nint lo_up(int x) { return hi_value(x); }\n',
}
failures = []


def run(work, table, root, *opts, expect, grep=None):
    with open(os.path.join(work, 'table.txt'), 'w') as f:
        f.write('# layers of the self-test\n' + table)
    cmd = [sys.executable, LAYERS, '--table', os.path.join(work, 'table.txt'),
           '--objects-root', os.path.join(work, root), *opts]
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(f'$ {" ".join(cmd[1:])}\n{r.stdout}{r.stderr}(exit {r.returncode})\n')
    if r.returncode != expect:
        failures.append(f'{root} {opts}: exit {r.returncode}, want {expect}')
    if grep and grep not in r.stdout:
        failures.append(f'{root} {opts}: no "{grep}" in the output')
    return r.stdout


LAYERS, cc, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
for name, text in SOURCES.items():
    src = os.path.join(work, 'src', name)
    os.makedirs(os.path.dirname(src), exist_ok=True)
    with open(src, 'w') as f:
        f.write(text)
    obj = os.path.join(work, 'bad', name + '.o')
    os.makedirs(os.path.dirname(obj), exist_ok=True)
    subprocess.run([cc, '-O1', '-ffunction-sections', '-c', src, '-o', obj],
                   check=True)
    if name != 'lo/up.c':
        os.makedirs(os.path.dirname(obj.replace('bad', 'clean', 1)), exist_ok=True)
        shutil.copy(obj, obj.replace('bad', 'clean', 1))

run(work, 'lo\nhi\n', 'clean', '--enforce', expect=0, grep=': clean')
run(work, 'lo\nhi\n', 'bad', expect=0,
    grep='cycle: hi lo\nup lo -> hi: 1 refs\n    lo/up.c:lo_up -> hi_value\n')
out = run(work, 'lo\nhi\n', 'bad', '--summary', '--enforce', expect=1)
if len(out.splitlines()) != 1:
    failures.append('--summary printed more than one line')
run(work, 'lo hi\n', 'clean', '--enforce', expect=1,
    grep='sideways hi -> lo: 1 refs')
run(work, 'lo\n', 'clean', '--enforce', expect=1, grep='not in the table: hi')

for f in failures:
    print('FAILED: ' + f)
print('layers self-test: ' + ('FAIL' if failures else 'pass'))
sys.exit(1 if failures else 0)
