#!/usr/bin/env python3
"""tests/packaging/check_spack.py: contrib/spack's recipe, without Spack.

usage: tests/packaging/check_spack.py SRC_DIR

  1. package.py byte-compiles (py_compile);
  2. it imports against a stub of spack.package (tests/packaging/spack_stub)
     and declares: version main from branch main and the version of
     include/coexec/version.h from tag v<version>; the variants uring,
     atomic_ops, shared, static, context and man; hwloc, cmake (build),
     pkgconfig (build), liburing when +uring, libatomic-ops when
     +atomic_ops; a conflict for ~shared~static;
  3. cmake_args() gives, for every combination of the variants and with
     and without tests, exactly the CMake flags each variant stands for;
  4. every CMake variable it sets is an option or cache variable of the
     project, and every value it gives one is among the values the project
     takes.
"""
import importlib.util
import itertools
import os
import py_compile
import re
import sys
import tempfile

failures = 0


def check(ok, what):
    global failures
    print("  %s  %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        failures += 1


def project_options(src):
    """{name: allowed values or None} of the project's options and cache
    variables."""
    opts = {}
    files = [os.path.join(src, "CMakeLists.txt")]
    cm = os.path.join(src, "cmake")
    files += [os.path.join(cm, f) for f in sorted(os.listdir(cm)) if f.endswith(".cmake")]
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for name in re.findall(r"^\s*option\((\w+)", text, re.M):
            opts[name] = {"ON", "OFF"}
        for name in re.findall(r"^\s*set\((\w+)\s+[^)]*\bCACHE\b", text, re.M):
            opts.setdefault(name, None)
        for name, values in re.findall(r"set_property\(CACHE (\w+) PROPERTY STRINGS ([^)]*)\)", text):
            opts[name] = set(values.split())
    return opts


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    src = os.path.abspath(sys.argv[1])
    recipe = os.path.join(src, "contrib", "spack", "packages", "libcoexec", "package.py")
    here = os.path.dirname(os.path.abspath(__file__))

    with tempfile.TemporaryDirectory() as tmp:
        try:
            py_compile.compile(recipe, cfile=os.path.join(tmp, "package.pyc"), doraise=True)
            check(True, "package.py byte-compiles")
        except py_compile.PyCompileError as e:
            check(False, "package.py does not compile: %s" % e)
            return 1
    check(os.path.exists(os.path.join(src, "contrib", "spack", "repo.yaml")),
          "contrib/spack/repo.yaml exists (spack repo add contrib/spack)")
    with open(os.path.join(src, "contrib", "spack", "repo.yaml"), encoding="utf-8") as f:
        check(re.search(r"^\s+namespace:\s*\w+", f.read(), re.M) is not None, "repo.yaml names a namespace")

    sys.path.insert(0, os.path.join(here, "spack_stub"))
    spec = importlib.util.spec_from_file_location("libcoexec_recipe", recipe)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cls = mod.Libcoexec
    stub = sys.modules["spack.package"]
    check(issubclass(cls, stub.CMakePackage), "Libcoexec is a CMakePackage")
    check(cls.git.startswith("file://") or "COEXEC_GIT" in os.environ,
          "git is the checkout the recipe lives in (or $COEXEC_GIT): %s" % cls.git)
    if cls.git.startswith("file://"):
        check(os.path.samefile(cls.git[len("file://"):], src), "that checkout is %s" % src)

    d = cls.directives
    versions = {a[0]: k for n, a, k in d if n == "version"}
    with open(os.path.join(src, "include", "coexec", "version.h"), encoding="utf-8") as f:
        vh = f.read()
    release = ".".join(re.search(r"#define COEXEC_VERSION_%s (\d+)" % p, vh).group(1)
                       for p in ("MAJOR", "MINOR", "PATCH"))
    check(versions.get("main") == {"branch": "main"}, 'version("main", branch="main")')
    check(versions.get(release) == {"tag": "v" + release},
          'version("%s", tag="v%s"), the version of include/coexec/version.h' % (release, release))

    variants = {a[0]: k for n, a, k in d if n == "variant"}
    want_variants = {"uring": True, "atomic_ops": False, "shared": True, "static": True,
                     "context": "asm", "man": True}
    for name, default in want_variants.items():
        check(name in variants and variants[name].get("default") == default,
              "variant %s, default %s" % (name, default))
    check(set(variants) == set(want_variants), "no other variant (%s)" % ", ".join(sorted(variants)))
    check(set(variants["context"].get("values", ())) == {"asm", "ucontext"}, "context=asm|ucontext")

    deps = [(a[0], k) for n, a, k in d if n == "depends_on"]

    def has_dep(prefix, type_=None, when=None):
        for name, k in deps:
            if name.split("@")[0] != prefix:
                continue
            t = k.get("type")
            t = (t,) if isinstance(t, str) else tuple(t or ())
            if (type_ is None or type_ in t) and k.get("when") == when:
                return True
        return False

    check(has_dep("hwloc"), "depends on hwloc")
    check(has_dep("cmake", "build"), "depends on cmake (build)")
    check(has_dep("pkgconfig", "build"), "depends on pkgconfig (build)")
    check(has_dep("liburing", when="+uring"), "depends on liburing when +uring")
    check(has_dep("libatomic-ops", when="+atomic_ops"), "depends on libatomic-ops when +atomic_ops")
    check(has_dep("python", "build", when="+man"), "depends on python (build) when +man")
    check(has_dep("cunit", "test"), "depends on cunit (test)")
    check(any(n == "conflicts" and a[0] == "~shared~static" for n, a, k in d),
          'conflicts("~shared~static")')

    # cmake_args for every combination.
    opts = project_options(src)
    onoff = lambda b: "ON" if b else "OFF"
    combos = 0
    bad = []
    for uring, ao, shared, static, man, tests in itertools.product((True, False), repeat=6):
        if not shared and not static:
            continue
        for context in ("asm", "ucontext"):
            s = stub.Spec(uring=uring, atomic_ops=ao, shared=shared, static=static,
                          context=context, man=man)
            got = cls(s, run_tests=tests).cmake_args()
            want = ["-DCOEXEC_WITH_LIBURING:BOOL=" + onoff(uring),
                    "-DCOEXEC_ATOMICS:STRING=" + ("ao" if ao else "c11"),
                    "-DCOEXEC_BUILD_SHARED:BOOL=" + onoff(shared),
                    "-DCOEXEC_BUILD_STATIC:BOOL=" + onoff(static),
                    "-DCOEXEC_CONTEXT:STRING=" + context,
                    "-DCOEXEC_MAN:BOOL=" + onoff(man),
                    "-DCOEXEC_BUILD_TESTS:BOOL=" + onoff(tests),
                    "-DCOEXEC_BUILD_BENCH:BOOL=OFF",
                    "-DCOEXEC_BUILD_EXAMPLES:BOOL=OFF"]
            combos += 1
            if sorted(got) != sorted(want):
                bad.append((repr(s) + (" (tests)" if tests else ""), sorted(set(got) ^ set(want))))
            for flag in got:
                m = re.match(r"-D(\w+):\w+=(.*)$", flag)
                if not m or m.group(1) not in opts:
                    bad.append(("unknown CMake variable", flag))
                elif opts[m.group(1)] is not None and m.group(2) not in opts[m.group(1)]:
                    bad.append(("value the project does not take", flag, sorted(opts[m.group(1)])))
    check(not bad, "cmake_args() of %d variant combinations: the right flags, all of them "
          "options or cache variables of CMakeLists.txt and cmake/*.cmake, with values they take" % combos)
    for b in bad[:10]:
        print("        %s" % (b,))

    print()
    if failures:
        print("spack check: %d failed" % failures)
        return 1
    print("spack check: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
