#!/usr/bin/env bash
# Prepares tests/gpu/.carry: the MPI library (Debian's MPICH, with its UCX and
# Hydra launcher), hwloc, OpenSSL's libcrypto, pkg-config and GoogleTest that run-device-checks.sh
# builds against on a GPU machine that has none of them and no network. Run it
# here, on Debian 12 with apt reachable; the folder is git-ignored, and the
# device call carries it (carry: ["tests/gpu/.carry"]).
#
# The packages are fetched with apt-get download, unpacked with dpkg -x,
# pruned of what the build does not use (static MPI libraries, Fortran and C++
# bindings, documentation, UCX's InfiniBand modules) and made relocatable: the
# pkg-config files and the mpicc wrapper find their files next to themselves,
# wherever the folder lands. About 45 MiB.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
carry="$here/.carry"
packages=(mpich libmpich-dev libmpich12 libucx0 libnuma1 libslurm38 libudev1
          libhwloc-dev libhwloc15 libssl-dev libssl3 pkgconf pkgconf-bin libpkgconf3 libgtest-dev)

rm -rf "$carry"
mkdir -p "$carry/debs" "$carry/root"
(cd "$carry/debs" && apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
for p in "${packages[@]}"; do
  ls "$carry/debs/${p}_"*.deb >/dev/null 2>&1 || { echo "prepare-device-carry: $p was not downloaded" >&2; exit 1; }
done
for deb in "$carry"/debs/*.deb; do dpkg -x "$deb" "$carry/root"; done
dpkg-deb -f "$carry/debs/"libmpich12_*.deb Version >"$carry/mpich-version"
rm -rf "$carry/debs"

usr="$carry/root/usr"
lib="$usr/lib/x86_64-linux-gnu"
rm -rf "$usr/share/doc" "$usr/share/man" "$usr/share/lintian" "$lib/fortran" "$lib/ucx/libuct_ib.so"* \
       "$lib/ucx/libuct_rdmacm.so"* "$lib"/libmpichfort.* "$lib"/libmpichcxx.* "$usr/bin/mpifort.mpich" \
       "$usr/bin/mpif77.mpich" "$usr/bin/mpif90.mpich"
find "$carry/root" -name '*.a' ! -name 'libgtest*.a' -delete

# Relocatable: pkg-config files relative to their own folder, the wrappers
# relative to their own, and the plain names CMake's FindMPI looks for.
for pc in "$lib"/pkgconfig/*.pc "$usr"/share/pkgconfig/*.pc; do
  [ -f "$pc" ] || continue
  case "$pc" in
    "$lib"/pkgconfig/*) up='${pcfiledir}/../../..' ;;
    *) up='${pcfiledir}/../..' ;;
  esac
  sed -i -e "s|^prefix=/usr\$|prefix=$up|" -e 's|^exec_prefix=/usr$|exec_prefix=${prefix}|' \
         -e 's|=/usr/lib/x86_64-linux-gnu$|=${prefix}/lib/x86_64-linux-gnu|' \
         -e 's|=/usr/include/x86_64-linux-gnu/mpich$|=${prefix}/include/x86_64-linux-gnu/mpich|' "$pc"
done
for wrapper in "$usr/bin/mpicc.mpich" "$usr/bin/mpicxx.mpich"; do
  sed -i -e 's|^prefix=/usr$|prefix="$(cd "$(dirname "$0")/.." \&\& pwd)"|' -e 's|^exec_prefix=/usr$|exec_prefix=$prefix|' \
         -e 's|^sysconfdir=/etc/mpich$|sysconfdir=$prefix/etc/mpich|' \
         -e 's|^includedir=/usr/include/x86_64-linux-gnu/mpich$|includedir=$prefix/include/x86_64-linux-gnu/mpich|' \
         -e 's|^libdir=/usr/lib/x86_64-linux-gnu$|libdir=$prefix/lib/x86_64-linux-gnu|' "$wrapper"
  grep -q '^prefix="$(cd' "$wrapper" || { echo "prepare-device-carry: could not relocate $wrapper" >&2; exit 1; }
done
# hwloc's generated config.h lies in the multiarch folder, which the compiler
# searches by itself only under /usr/include.
sed -i 's|^Cflags: -I${includedir}$|Cflags: -I${includedir} -I${includedir}/x86_64-linux-gnu|' "$lib/pkgconfig/hwloc.pc"
grep -q 'x86_64-linux-gnu$' "$lib/pkgconfig/hwloc.pc" || { echo "prepare-device-carry: could not extend hwloc.pc" >&2; exit 1; }
# So are OpenSSL's two configuration headers: beside the others, one include
# folder holds them all.
mv "$usr"/include/x86_64-linux-gnu/openssl/*.h "$usr/include/openssl/"
[ -f "$usr/include/openssl/configuration.h" ] || { echo "prepare-device-carry: no OpenSSL configuration.h" >&2; exit 1; }
ln -sf mpicc.mpich "$usr/bin/mpicc"
ln -sf mpicxx.mpich "$usr/bin/mpicxx"
ln -sf mpiexec.hydra "$usr/bin/mpiexec"
# No link may point outside the folder.
if find "$carry/root" -type l -lname '/*' | grep -q .; then
  echo "prepare-device-carry: absolute links left:" >&2
  find "$carry/root" -type l -lname '/*' >&2
  exit 1
fi
echo "prepare-device-carry: $carry ($(du -sh "$carry" | cut -f1), MPICH $(cat "$carry/mpich-version"))"
