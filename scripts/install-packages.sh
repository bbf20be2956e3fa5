#!/usr/bin/env bash
# install-packages.sh PACKAGE...: installs those of the Debian/Ubuntu packages
# named that are not installed yet (apt-get; through sudo when not root).
# The set-up scripts' one way of installing what they need.
#
# A package may bring another MPI (Open MPI comes with openmpi-bin, which many
# Debian packages of MPI codes pull in through mpi-default-bin), and installing
# it makes that MPI the system's `mpicc`/`mpiexec` (the `mpi` and `mpirun`
# alternatives): they are put back to what they were, so that a build keeps
# the MPI it had. Builds for another MPI name its compilers and launcher.
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "== installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
alternative() { update-alternatives --query "$1" 2>/dev/null | sed -n 's/^Value: //p'; }
declare -A was=([mpi]=$(alternative mpi) [mpirun]=$(alternative mpirun))
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for name in mpi mpirun; do
  if [ -n "${was[$name]}" ] && [ "$(alternative "$name")" != "${was[$name]}" ]; then
    $sudo update-alternatives --set "$name" "${was[$name]}" >/dev/null
  fi
done
