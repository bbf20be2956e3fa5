# Spack recipe for pgstrategy (Package API v1.0, see ../../repo.yaml). There is
# no release yet: install a checkout with dev_path, from its top folder:
#
#   spack repo add ./spack
#   spack external find mpich hwloc openssl cmake gmake pkgconf python   # downloads nothing then
#   spack install pgstrategy@main dev_path=$PWD ^mpich   # or ^openmpi, +cuda cuda_arch=90, +gloo
#   spack test run pgstrategy                            # the installed tools and examples on 2 ranks
import os

from spack.package import *


class Pgstrategy(CMakePackage, CudaPackage):
    """Process groups for C, C++ and Fortran codes on MPI: one call returns a
    working communicator for the device (MPI on CPU, NCCL on CUDA, a hierarchical
    shared-memory and MPI backend, or a communication library plugged in at run
    time), with hwloc topology, pg-bench and pg-topo."""

    homepage = "https://github.com/pgstrategy/pgstrategy"
    git = "https://github.com/pgstrategy/pgstrategy.git"

    # The only version until a release is published with a tarball and its checksum.
    version("main", branch="main", preferred=True)

    variant("fortran", default=True, description="Build the pgstrategy Fortran module")
    variant("gloo", default=False, description="Build the Gloo plugin and pg-bench's Gloo baseline")
    variant("tests", default=False, description="Build the test suite (run by --test=root)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+fortran")
    # The Fortran binding's calls are generated at build time (bindings/fortran/gen_binding.py).
    depends_on("python@3.8:", type="build", when="+fortran")
    depends_on("cmake@3.21:", type="build")
    depends_on("pkgconfig", type="build")

    depends_on("mpi")
    depends_on("hwloc@2:")
    # The bootstrap's HMAC-SHA-256 (libcrypto).
    depends_on("openssl")
    depends_on("gloo", when="+gloo")
    depends_on("googletest", type=("build", "link"), when="+tests")
    # The library itself is host code against the CUDA runtime and NCCL; the GPU
    # architectures matter to NCCL, which compiles the kernels.
    depends_on("nccl", when="+cuda")
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"nccl cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")

    conflicts("^mpich~fortran", when="+fortran", msg="+fortran needs an MPI with Fortran")
    conflicts("^openmpi~fortran", when="+fortran", msg="+fortran needs an MPI with Fortran")

    def cmake_args(self):
        spec = self.spec
        mpi = spec["mpi"]
        args = [
            # ON or OFF, never the build's AUTO default: the spec alone decides what
            # is built, whatever else the machine has installed.
            self.define_from_variant("PGS_ENABLE_CUDA", "cuda"),
            self.define_from_variant("PGS_ENABLE_FORTRAN", "fortran"),
            self.define_from_variant("PGS_ENABLE_GLOO", "gloo"),
            self.define_from_variant("PGS_ENABLE_TESTS", "tests"),
            # The PyTorch backend is a pip package built against this install
            # (pip install ./bindings/python with CMAKE_PREFIX_PATH set to it).
            self.define("PGS_ENABLE_TORCH", False),
            # The libFuzzer target is a developer's tool (clang), not part of the install.
            self.define("PGS_ENABLE_FUZZ", False),
            # The spec's MPI, not the first mpicc on PATH (FindMPI asks the wrappers).
            self.define("MPI_C_COMPILER", mpi.mpicc),
            self.define("MPI_CXX_COMPILER", mpi.mpicxx),
            self.define("MPIEXEC_EXECUTABLE", self._mpiexec_path()),
        ]
        if spec.satisfies("+fortran"):
            args.append(self.define("MPI_Fortran_COMPILER", mpi.mpifc))
        if spec.satisfies("+cuda"):
            args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
            if not spec.satisfies("cuda_arch=none"):
                args.append(self.define_from_variant("CMAKE_CUDA_ARCHITECTURES", "cuda_arch"))
        return args

    def _mpiexec_path(self):
        return join_path(self.spec["mpi"].prefix.bin, "mpiexec")

    def _open_mpi_leave(self):
        """What Open MPI needs to start the tests' ranks on any machine: leave to
        oversubscribe (the suite runs up to 4 ranks) and, as root, to run at all
        (it asks twice)."""
        if not self.spec.satisfies("^openmpi"):
            return {}
        env = {"OMPI_MCA_rmaps_base_oversubscribe": "1"}
        if os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        return env

    def setup_build_environment(self, env):
        # --test=root runs the suite in Spack's build environment, which drops
        # every variable ending in _ROOT, OMPI_ALLOW_RUN_AS_ROOT among them.
        if self.spec.satisfies("+tests"):
            for name, value in self._open_mpi_leave().items():
                env.set(name, value)

    # --- spack test run -------------------------------------------------------

    @run_after("install")
    def cache_test_sources(self):
        """Keep the examples, which are not installed, for the tests to build."""
        cache_extra_test_sources(
            self, [join_path("examples", "c"), join_path("examples", "fortran"), join_path("examples", "mpi")]
        )

    def _run_on_two_ranks(self, program, env=None, args=()):
        """Runs program on 2 ranks with the spec's MPI and returns its output."""
        mpiexec = which(self._mpiexec_path(), required=True)
        env = dict(env or {}, **self._open_mpi_leave())
        out = mpiexec("-n", "2", program, *args, output=str, error=str, extra_env=env)
        print(out)
        return out

    def _compiler(self, language, attribute):
        """The path of the compiler the spec was built with for language (c, cxx or
        fortran): Spack 1.x keeps compilers as build dependencies of the spec."""
        if language not in self.spec:
            raise RuntimeError(f"{self.spec.short_spec} has no {language} compiler in its spec")
        path = getattr(self.spec[language].package, attribute, None)
        if not path:
            raise RuntimeError(f"{self.spec[language].short_spec} gives no {language} compiler")
        return path

    def _example_dir(self, name):
        return join_path(self.test_suite.current_test_cache_dir, "examples", name)

    def test_pg_topo(self):
        """run the installed pg-topo on 2 ranks"""
        out = self._run_on_two_ranks(self.prefix.bin.join("pg-topo"))
        check_outputs(["pg-topo: 2 ranks", "rank 1: ", "local=1/2"], out)
        # The cuda variant, not what the machine had, decided the build.
        has_cuda = "this build of pgstrategy has no CUDA support" not in out
        if has_cuda != self.spec.satisfies("+cuda"):
            raise RuntimeError(f"pg-topo says CUDA support is {has_cuda} in {self.spec.short_spec}")

    def test_gloo_plugin(self):
        """pg-topo finds the installed Gloo plugin on 2 ranks"""
        if not self.spec.satisfies("+gloo"):
            raise SkipTest("built without +gloo")
        out = self._run_on_two_ranks(self.prefix.bin.join("pg-topo"), {"PGS_BACKEND": "cpu:gloo"})
        check_outputs([r"device cpu: backend gloo \(PGS_BACKEND\): available"], out)

    def test_c_example(self):
        """build the C example with the MPI's mpicc and pkg-config, run it on 2 ranks"""
        pc_file = find(self.prefix, "pgstrategy.pc")
        if not pc_file:
            raise RuntimeError(f"no pgstrategy.pc under {self.prefix}")
        pkg_config = which(self.spec["pkgconfig"].prefix.bin.join("pkg-config"), required=True)
        pc_path = os.pathsep.join(
            p for p in (os.path.dirname(pc_file[0]), os.environ.get("PKG_CONFIG_PATH")) if p
        )
        flags = pkg_config(
            "--cflags", "--libs", "pgstrategy", output=str, extra_env={"PKG_CONFIG_PATH": pc_path}
        ).split()
        with working_dir(self._example_dir("c")):
            mpicc = which(self.spec["mpi"].mpicc, required=True)
            mpicc("allreduce_demo.c", "-o", "allreduce_demo", *flags)
            out = self._run_on_two_ranks("./allreduce_demo")
        check_outputs(["over 2 ranks", "0 wrong elements", "OK"], out)

    def test_mpi_layer(self):
        """build a plain MPI program with the MPI's mpicc, run it under pgs-mpi on 2 ranks"""
        with working_dir(self._example_dir("mpi")):
            mpicc = which(self.spec["mpi"].mpicc, required=True)
            mpicc("cg_mpi.c", "-o", "cg_mpi", "-lm")
            out = self._run_on_two_ranks(
                self.prefix.bin.join("pgs-mpi"), {"PGS_MPI_SUMMARY": "1"}, args=["./cg_mpi", "512"]
            )
        check_outputs([r"cg_mpi: n=512 on 2 ranks, .*: OK", r"pgs-mpi summary: routed [1-9][0-9]* calls"], out)

    def test_fortran_example(self):
        """build the Fortran example with CMake's find_package, run it on 2 ranks"""
        if not self.spec.satisfies("+fortran"):
            raise SkipTest("built without +fortran")
        mpi = self.spec["mpi"]
        cmake = which(self.spec["cmake"].prefix.bin.cmake, required=True)
        build = join_path(self.test_suite.current_test_cache_dir, "build-fortran")
        cmake(
            "-S", self._example_dir("fortran"), "-B", build,
            self.define("CMAKE_PREFIX_PATH", self.prefix),
            # The compilers that built the install, not cc and gfortran from PATH:
            # the installed pgstrategy.mod is read only by the Fortran compiler
            # (and version) that wrote it.
            self.define("CMAKE_C_COMPILER", self._compiler("c", "cc")),
            self.define("CMAKE_Fortran_COMPILER", self._compiler("fortran", "fortran")),
            self.define("MPI_C_COMPILER", mpi.mpicc),
            self.define("MPI_Fortran_COMPILER", mpi.mpifc),
        )
        cmake("--build", build)
        out = self._run_on_two_ranks(join_path(build, "heat1d_fortran"))
        check_outputs(["heat1d on 2 ranks", "heat1d: OK"], out)
