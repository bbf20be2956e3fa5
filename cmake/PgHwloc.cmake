# hwloc, as the target pgs::hwloc: the system's (pkg-config hwloc >= 2.0), or
# the 2.9.0 release (third_party/hwloc/README.md), built here as a static library with
# position-independent code and linked into libpgstrategy (whose version script
# exports none of its symbols). The bundled one serves where hwloc's -dev
# package is missing, as in a pip build on a machine without HPC packages;
# PyPI has no hwloc wheel. It reads the node and its PCI devices from Linux's
# /sys itself: no libxml2, libpciaccess, libudev, CUDA or NVML.
#
# PGS_HWLOC: SYSTEM (required, through pkg-config), BUNDLED (always the
# release), AUTO (the system's when pkg-config finds it). Sets PGS_HWLOC_FROM to "system" or "bundled".
# The release is downloaded at build time (its SHA-256 checked) from the Open
# MPI project or Debian's mirror, or read from PGS_HWLOC_TARBALL offline.
set(PGS_HWLOC AUTO CACHE STRING "hwloc: SYSTEM, BUNDLED (the 2.9.0 release, built here) or AUTO (the system's when found)")
set(PGS_HWLOC_TARBALL "" CACHE FILEPATH "hwloc-2.9.0.tar.bz2 on this machine, for a bundled build without network")
set_property(CACHE PGS_HWLOC PROPERTY STRINGS SYSTEM BUNDLED AUTO)
if(NOT PGS_HWLOC MATCHES "^(SYSTEM|BUNDLED|AUTO)$")
  message(FATAL_ERROR "PGS_HWLOC='${PGS_HWLOC}': expected SYSTEM, BUNDLED or AUTO")
endif()

add_library(pgs_hwloc INTERFACE)
add_library(pgs::hwloc ALIAS pgs_hwloc)

if(PGS_HWLOC STREQUAL "SYSTEM")
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)
elseif(PGS_HWLOC STREQUAL "AUTO" AND PKG_CONFIG_FOUND)
  pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc>=2.0)
endif()

if(HWLOC_FOUND)
  target_link_libraries(pgs_hwloc INTERFACE PkgConfig::HWLOC)
  set(PGS_HWLOC_FROM system)
else()
  include(ExternalProject)
  # The extracted files keep the archive's dates: with extraction times, make
  # may find configure.ac newer than aclocal.m4 and run automake, which a
  # machine without autotools lacks.
  if(POLICY CMP0135)
    cmake_policy(SET CMP0135 OLD)
  endif()
  set(_release hwloc-2.9.0)
  if(PGS_HWLOC_TARBALL)
    set(_sources ${PGS_HWLOC_TARBALL})
  else()
    set(_sources https://download.open-mpi.org/release/hwloc/v2.9/${_release}.tar.bz2
                 http://deb.debian.org/debian/pool/main/h/hwloc/hwloc_2.9.0.orig.tar.bz2)
  endif()
  set(_prefix ${CMAKE_CURRENT_BINARY_DIR}/third_party/hwloc)
  set(_library ${_prefix}/lib/${CMAKE_STATIC_LIBRARY_PREFIX}hwloc${CMAKE_STATIC_LIBRARY_SUFFIX})
  ExternalProject_Add(pgs_hwloc_build
    URL ${_sources}
    TIMEOUT 120
    URL_HASH SHA256=b3fb1a43a14d8fbcd8e976de5ede2ea7ce1d768ed173adb33c7ceaaf098dc970
    PREFIX ${_prefix}
    INSTALL_DIR ${_prefix}
    CONFIGURE_COMMAND <SOURCE_DIR>/configure --prefix=<INSTALL_DIR> --libdir=<INSTALL_DIR>/lib
      --enable-static --disable-shared --with-pic --enable-embedded-mode=no
      --disable-libxml2 --disable-cairo --disable-opencl --disable-cuda --disable-nvml --disable-rsmi
      --disable-levelzero --disable-gl --disable-libudev --disable-plugin-dlopen --disable-readme
      CC=${CMAKE_C_COMPILER}
    BUILD_COMMAND make -j
    INSTALL_COMMAND make install-exec install-data
    BUILD_BYPRODUCTS ${_library}
    LOG_CONFIGURE ON LOG_BUILD ON LOG_INSTALL ON LOG_OUTPUT_ON_FAILURE ON)
  # The include folder must exist when the targets are generated.
  file(MAKE_DIRECTORY ${_prefix}/include)
  add_library(pgs_hwloc_static STATIC IMPORTED GLOBAL)
  set_target_properties(pgs_hwloc_static PROPERTIES IMPORTED_LOCATION ${_library})
  add_dependencies(pgs_hwloc_static pgs_hwloc_build)
  target_include_directories(pgs_hwloc INTERFACE $<BUILD_INTERFACE:${_prefix}/include>)
  target_link_libraries(pgs_hwloc INTERFACE $<BUILD_INTERFACE:pgs_hwloc_static> m)
  set(PGS_HWLOC_FROM bundled)
  message(STATUS "hwloc: no system hwloc >= 2.0 (PGS_HWLOC=${PGS_HWLOC}): building ${_release} (${_sources}; offline: -DPGS_HWLOC_TARBALL=<file>)")
endif()
