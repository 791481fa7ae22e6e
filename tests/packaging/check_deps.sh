#!/usr/bin/env bash
# tests/packaging/check_deps.sh: scripts/deps.sh on both families of
# distributions, with a fake /etc/os-release (COEXEC_OS_RELEASE) and
# --dry-run, so nothing is installed:
#   Debian 12, Ubuntu 24.04   apt-get update, then apt-get install of the
#                             Debian names; cross only when asked, announced
#   Fedora 40, Rocky 9        dnf install of the Fedora names; cross refused
#   an unknown distribution   refused, naming what to install
# and, when run as root on a machine without sudo, as an unprivileged user
# without --dry-run: it prints the command to run as root and exits 1.
#
# usage: tests/packaging/check_deps.sh SRC_DIR
set -uo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 SRC_DIR" >&2; exit 2; }
deps=$1/scripts/deps.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/coexec-deps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
failures=0
pass() { printf '  ok    %s\n' "$1"; }
fail() { printf '  FAIL  %s\n' "$1"; failures=$((failures + 1)); }

osr() { # name, lines...
  local f=$tmp/$1; shift
  printf '%s\n' "$@" >"$f"
  chmod 644 "$f"
  echo "$f"
}
debian=$(osr debian 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"' 'ID=debian' 'VERSION_ID="12"')
ubuntu=$(osr ubuntu 'PRETTY_NAME="Ubuntu 24.04 LTS"' 'ID=ubuntu' 'ID_LIKE=debian')
fedora=$(osr fedora 'PRETTY_NAME="Fedora Linux 40"' 'ID=fedora' 'VERSION_ID=40')
rocky=$(osr rocky 'PRETTY_NAME="Rocky Linux 9.4"' 'ID="rocky"' 'ID_LIKE="rhel centos fedora"')
arch=$(osr arch 'PRETTY_NAME="Arch Linux"' 'ID=arch')

run() { # os-release file, args... -> $out, $rc
  out=$(COEXEC_OS_RELEASE=$1 bash "$deps" "${@:2}" 2>&1)
  rc=$?
}
install_line() { grep -E '^\+ .*(apt-get .* install|dnf install)' <<<"$out"; }
words() { tr ' ' '\n' <<<"$1"; }
has_all() { # what, line, names... (whole words of the line)
  local what=$1 line=$2 missing=()
  for p in "${@:3}"; do words "$line" | grep -qx -- "$p" || missing+=("$p"); done
  if [[ ${#missing[@]} -eq 0 ]]; then pass "$what"; else fail "$what: missing ${missing[*]}"; fi
}
has_none() {
  local what=$1 line=$2 found=()
  for p in "${@:3}"; do words "$line" | grep -qx -- "$p" && found+=("$p"); done
  if [[ ${#found[@]} -eq 0 ]]; then pass "$what"; else fail "$what: has ${found[*]}"; fi
}

debian_names=(cmake ninja-build pkg-config gcc libc6-dev libhwloc-dev hwloc-nox libatomic-ops-dev
              libcunit1-dev libudev-dev liburing-dev python3 binutils groff-base man-db
              openmpi-bin libopenmpi-dev valgrind doxygen)
fedora_names=(cmake ninja-build pkgconf-pkg-config gcc glibc-devel hwloc-devel hwloc
              libatomic_ops-devel CUnit-devel systemd-devel liburing-devel python3 binutils
              groff-base man-db openmpi openmpi-devel valgrind valgrind-devel doxygen)
cross_names=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)

# The default groups on a system of one family: exit 0, the family's
# command, all its names, none of the other family's, no cross toolchain.
check_default() { # os, command, its line (regex), names (array name), names it must not have...
  local os=$1 command=$2 pattern=$3
  local -n names=$4
  run "${!os}" --dry-run
  line=$(install_line)
  [[ $rc -eq 0 ]] && pass "$os: --dry-run exits 0" || fail "$os: --dry-run exits $rc: $out"
  grep -q -- "$pattern" <<<"$out" && pass "$os: runs $command" || fail "$os: no $command: $out"
  has_all "$os: the default groups (build test docs) install its names" "$line" "${names[@]}"
  has_none "$os: no name of the other family, no cross toolchain" "$line" "${@:5}" "${cross_names[@]}"
  grep -q 'dry run: nothing installed' <<<"$out" && pass "$os: says nothing was installed" || fail "$os: no dry-run notice"
}
for os in debian ubuntu; do
  check_default "$os" "apt-get update" '^+ .*apt-get .* update$' debian_names CUnit-devel hwloc-devel dnf
done
for os in fedora rocky; do
  check_default "$os" "dnf install" '^+ dnf install -y' fedora_names libhwloc-dev libcunit1-dev pkg-config hwloc-nox apt-get
  run "${!os}" --dry-run cross
  [[ $rc -ne 0 ]] && grep -q 'Debian and Ubuntu only' <<<"$out" && pass "$os: cross refused (Debian only)" \
    || fail "$os: cross not refused ($rc): $out"
done

run "$debian" --dry-run cross
line=$(install_line)
has_all "debian: cross installs the cross toolchain" "$line" "${cross_names[@]}"
note=$(grep -n 'note: installing the AArch64 cross toolchain' <<<"$out" | cut -d: -f1)
first=$(grep -n '^+ ' <<<"$out" | head -n1 | cut -d: -f1)
[[ -n "$note" && -n "$first" && $note -lt $first ]] && pass "debian: cross is announced before any command" \
  || fail "debian: cross not announced first: $out"
run "$debian" --dry-run build
has_none "debian: build alone installs no valgrind, doxygen or cross toolchain" "$(install_line)" \
  valgrind doxygen "${cross_names[@]}"

run "$arch" --dry-run
[[ $rc -ne 0 ]] && grep -q 'neither Debian-like nor Fedora-like' <<<"$out" && grep -qw libhwloc-dev <<<"$out" \
  && pass "arch: refused, naming what to install" || fail "arch: ($rc) $out"
run "$debian" --dry-run nonsense
[[ $rc -eq 2 ]] && pass "an unknown group exits 2" || fail "an unknown group exits $rc"

if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null 2>&1 && ! command -v sudo >/dev/null 2>&1; then
  out=$(COEXEC_OS_RELEASE=$fedora setpriv --reuid=65534 --regid=65534 --clear-groups bash "$deps" docs 2>&1)
  rc=$?
  if [[ $rc -eq 1 ]] && grep -q 'neither root nor sudo: run these as root' <<<"$out" &&
     grep -q '^  dnf install -y .*doxygen' <<<"$out"; then
    pass "neither root nor sudo: prints the command to run as root, exits 1"
  else
    fail "neither root nor sudo ($rc): $out"
  fi
else
  echo "  skip  the neither-root-nor-sudo case (needs root, setpriv, and no sudo here)"
fi

echo
if [[ $failures -eq 0 ]]; then echo "deps check: all passed"; else echo "deps check: $failures failed"; exit 1; fi
