# libcoexec's Spack recipe (contrib/spack; see contrib/spack/README.md).
#
# The versions come from a git repository: by default the checkout this
# file lives in (contrib/spack/packages/libcoexec/ is four levels below its
# root), or the URL in COEXEC_GIT when set (a site's mirror of the
# repository). Releases are tagged vMAJOR.MINOR.PATCH (docs/VERSIONING.md).
#
# Variants map to the project's CMake options (CMakeLists.txt):
#   +uring       COEXEC_WITH_LIBURING  the service stream's file I/O through
#                                      io_uring (liburing)
#   +atomic_ops  COEXEC_ATOMICS=ao     libatomic_ops atomics (else c11)
#   +shared      COEXEC_BUILD_SHARED   libcoexec.so
#   +static      COEXEC_BUILD_STATIC   libcoexec.a
#   context=     COEXEC_CONTEXT        asm (x86-64, AArch64) or ucontext
#   +man         COEXEC_MAN            section 3 manual pages (python3)
# The tests (CUnit) are built only for `spack install --test=root`, the
# benchmarks and examples never.

import os

from spack.package import *


def _checkout_root():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", ".."))


class Libcoexec(CMakePackage):
    """User-level threads (ULTs), tasklets and fork-join tasks scheduled on
    execution streams pinned to cores, with ULT-aware synchronization and a
    service stream that runs blocking calls off the compute streams."""

    git = os.environ.get("COEXEC_GIT", "file://" + _checkout_root())

    license("MIT")

    version("main", branch="main")
    version("0.1.0", tag="v0.1.0")

    variant("uring", default=True, description="File I/O of the service stream through io_uring")
    variant("atomic_ops", default=False, description="Use libatomic_ops for the atomics (COEXEC_ATOMICS=ao)")
    variant("shared", default=True, description="Build libcoexec.so")
    variant("static", default=True, description="Build libcoexec.a")
    variant("context", default="asm", values=("asm", "ucontext"), multi=False,
            description="Context switch: assembly (x86-64, AArch64) or ucontext")
    variant("man", default=True, description="Generate and install the manual pages")

    conflicts("~shared~static", msg="libcoexec needs at least one of +shared and +static")

    depends_on("c", type="build")
    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("python@3:", type="build", when="+man")
    depends_on("hwloc@2:")
    depends_on("liburing@2:", when="+uring")
    depends_on("libatomic-ops", when="+atomic_ops")
    depends_on("cunit", type="test")

    def cmake_args(self):
        return [
            self.define_from_variant("COEXEC_WITH_LIBURING", "uring"),
            self.define("COEXEC_ATOMICS", "ao" if self.spec.satisfies("+atomic_ops") else "c11"),
            self.define_from_variant("COEXEC_BUILD_SHARED", "shared"),
            self.define_from_variant("COEXEC_BUILD_STATIC", "static"),
            self.define_from_variant("COEXEC_CONTEXT", "context"),
            self.define_from_variant("COEXEC_MAN", "man"),
            self.define("COEXEC_BUILD_TESTS", self.run_tests),
            self.define("COEXEC_BUILD_BENCH", False),
            self.define("COEXEC_BUILD_EXAMPLES", False),
        ]
