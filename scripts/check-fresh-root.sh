#!/usr/bin/env bash
# A torch user's install on a machine with nothing of HPC, as the README gives
# it. In a minimal Debian/Ubuntu root made with debootstrap from this machine's
# apt mirror (Python, venv, pip, a compiler and Python's headers, which every
# C++ extension of torch builds against; no MPI, hwloc, OpenSSL headers or
# CMake): a venv with torch and Lightning, the README's one pip command,
# then 2 ranks under torchrun and under Lightning's own launcher, on the mpich
# wheel and, with the same build, on Debian's MPICH. Then the wheel of
# scripts/build-wheel.sh, installed after the compiler is removed, runs the
# same way. pip's cache is this machine's, so torch is downloaded once.
#
# Needs root (debootstrap, chroot, mounts) and the package indexes; exits 77
# when it cannot run here. FRESH_ROOT=<folder> keeps the root there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# pip's cache is the caller's, also when sudo makes this root.
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$HOME/.cache/pip}
if [ "$(id -u)" -ne 0 ]; then
  if sudo -n true 2>/dev/null; then
    exec sudo -E "$0" "$@"
  fi
  echo "check-fresh-root: skipped: debootstrap and chroot need root (or sudo without a password)" >&2
  exit 77
fi
scripts/install-packages.sh debootstrap

. /etc/os-release
suite=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
# This machine's mirror: the first URIs of a deb822 source, or the first deb line.
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 !~ /^\[/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || { echo "check-fresh-root: skipped: no apt mirror found" >&2; exit 77; }

root=${FRESH_ROOT:-$(mktemp -d "${TMPDIR:-/tmp}/pgs-fresh-root.XXXXXX")}
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  [ -n "${FRESH_ROOT:-}" ] || rm -rf --one-file-system "$root"
}
trap cleanup EXIT
seconds() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { printf "%.0f s", b - a }'; }

start=$(seconds)
echo "== debootstrap $suite from $mirror into $root" >&2
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,python3-dev,build-essential,ca-certificates \
  "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
  tail -20 "$root.debootstrap.log" >&2
  echo "check-fresh-root: skipped: debootstrap failed (log above)" >&2
  exit 77
}
rm -f "$root.debootstrap.log"
echo "   root made in $(since "$start")" >&2

# attach ARGS... TARGET: mount, remembered for the clean-up; a machine that allows no mounts skips.
attach() {
  mount "$@" || { echo "check-fresh-root: skipped: cannot mount in the root (mount $*)" >&2; exit 77; }
  mounted+=("${!#}")
}
attach -t proc proc "$root/proc"
attach --rbind /dev "$root/dev"
attach --rbind /sys "$root/sys"
mkdir -p "$PIP_CACHE_DIR" "$root/root/.cache/pip"
attach --bind "$PIP_CACHE_DIR" "$root/root/.cache/pip"
cp /etc/resolv.conf /etc/hosts "$root/etc/"
# pip's certificate authorities where this machine names its own (a proxy may sign PyPI's certificates).
if [ -n "${PIP_CERT:-}" ]; then
  cp "$PIP_CERT" "$root/etc/ssl/pip-cert.pem"
fi
# The checkout's tracked files, as a user's copy of it.
mkdir -p "$root/src/pgstrategy"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$root/src/pgstrategy"

# In the root: a clean environment (the host's pip settings stay outside), proxies kept.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    ${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} \
    ${no_proxy:+no_proxy=$no_proxy} ${PIP_CERT:+PIP_CERT=/etc/ssl/pip-cert.pem} DEBIAN_FRONTEND=noninteractive "$@"
}
# timed WHAT COMMAND...: COMMAND in the root, then how long it took.
timed() {
  local what=$1 start
  shift
  start=$(seconds)
  in_root "$@"
  echo "== $what: $(since "$start")" >&2
}
# refuse_if MESSAGE TEST: the check fails with MESSAGE when the shell TEST succeeds in the root.
refuse_if() {
  if in_root sh -c "$2" >/dev/null 2>&1; then
    echo "FAILED: $1" >&2
    exit 1
  fi
}
# trains LABEL EXPECTED-MPI SUCCESS-TEXT COMMAND [VAR=VALUE...]: COMMAND (in the
# checkout) must exit 0, print SUCCESS-TEXT and run on EXPECTED-MPI.
trains() {
  local label=$1 mpi=$2 success=$3 command=$4 out
  shift 4
  if ! out=$(in_root env "$@" bash -c "cd /src/pgstrategy && $command" 2>&1) ||
    ! grep -q "$success" <<<"$out" || ! grep -q "MPI: $mpi" <<<"$out"; then
    echo "$out" >&2
    echo "FAILED: $label: '$command' did not print '$success' on $mpi" >&2
    exit 1
  fi
}
# run_ddp LABEL EXPECTED-MPI [VAR=VALUE...]: 2 ranks under torchrun, then
# under Lightning's launcher; both must train, agree and name the MPI.
run_ddp() {
  local label=$1 mpi=$2
  shift 2
  trains "$label" "$mpi" "parameters identical on every rank: True" \
    "torchrun --nproc-per-node 2 examples/python/ddp_train.py" "$@"
  trains "$label" "$mpi" "trained on 2 ranks" "python examples/python/lightning_train.py --devices 2" "$@"
  echo "   $label: torchrun and Lightning's launcher, 2 ranks, on $mpi" >&2
}

timed "venv with torch and Lightning" bash -c 'python3 -m venv /venv && pip install -q torch lightning'
refuse_if "the fresh root has MPI, CMake, hwloc or OpenSSL headers: not what this check means" \
  'command -v mpicc || command -v cmake || test -e /usr/include/hwloc.h || test -e /usr/include/openssl'

timed "pip install ./bindings/python" bash -c 'cd /src/pgstrategy && pip install -q ./bindings/python'
run_ddp "the mpich wheel" "MPICH 5"
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends libmpich12 >/dev/null
run_ddp "Debian's MPICH (the same build)" "MPICH 4" PGS_MPI_LIBRARY=libmpich.so.12

timed "scripts/build-wheel.sh" bash -c 'cd /src/pgstrategy && scripts/build-wheel.sh python' >/dev/null
in_root apt-get purge -y -qq --auto-remove build-essential gcc g++ cpp make python3-dev >/dev/null
refuse_if "a compiler is left in the root" 'command -v cc || command -v gcc || command -v c++'
timed "the wheel installed without a compiler" \
  bash -c 'pip uninstall -q -y pgstrategy-torch && pip install -q /src/pgstrategy/dist/pgstrategy_torch-*.whl'
run_ddp "the wheel, on the mpich wheel" "MPICH 5"
echo "check-fresh-root: PASSED" >&2
