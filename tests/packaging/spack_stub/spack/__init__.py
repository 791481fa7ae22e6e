"""A stand-in for Spack, only as much as tests/packaging/check_spack.py
needs to import contrib/spack's recipe without Spack installed."""
