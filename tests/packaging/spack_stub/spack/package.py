"""A tiny stand-in for spack.package: the directives and the CMakePackage
methods contrib/spack/packages/libcoexec/package.py uses.

Directives record their arguments on the class they appear in (as
cls.directives: [(name, args, kwargs)]); CMakePackage.define and
define_from_variant format flags as Spack does (-DNAME:BOOL=ON,
-DNAME:STRING=value). A package is made with a Spec of variant values and
run_tests, as Spack would make it for one concrete spec.
"""
import re

_pending = []


def _directive(name):
    def record(*args, **kwargs):
        _pending.append((name, args, kwargs))
    record.__name__ = name
    return record


version = _directive("version")
variant = _directive("variant")
depends_on = _directive("depends_on")
conflicts = _directive("conflicts")
license = _directive("license")
maintainers = _directive("maintainers")
requires = _directive("requires")
patch = _directive("patch")


class Variant:
    def __init__(self, name, value):
        self.name = name
        self.value = value


class Spec:
    """Variant values of a concrete spec: satisfies('+a~b c=d')."""

    def __init__(self, **values):
        self.variants = {k: Variant(k, v) for k, v in values.items()}

    def satisfies(self, text):
        for sign, name, key, value in re.findall(r"([+~])(\w+)|(\w+)=(\w+)", text):
            if sign:
                want = sign == "+"
                if name not in self.variants or bool(self.variants[name].value) != want:
                    return False
            elif key not in self.variants or str(self.variants[key].value) != value:
                return False
        return True

    def __contains__(self, text):
        return self.satisfies(text)

    def __repr__(self):
        return "".join(("+" if v.value else "~") + k if isinstance(v.value, bool)
                       else " %s=%s" % (k, v.value) for k, v in self.variants.items())


class CMakePackage:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.directives = list(_pending)
        _pending.clear()

    def __init__(self, spec, run_tests=False):
        self.spec = spec
        self.run_tests = run_tests

    def define(self, name, value):
        if isinstance(value, bool):
            kind, value = "BOOL", "ON" if value else "OFF"
        elif isinstance(value, (list, tuple)):
            kind, value = "STRING", ";".join(str(v) for v in value)
        else:
            kind = "STRING"
        return "-D%s:%s=%s" % (name, kind, value)

    def define_from_variant(self, name, variant=None):
        return self.define(name, self.spec.variants[variant or name.lower()].value)
