# hwloc, as the target pgs::hwloc: the system's (pkg-config hwloc >= 2.0), or
# the release kept in third_party/hwloc, built here as a static library with
# position-independent code and linked into libpgstrategy (whose version script
# exports none of its symbols). The bundled one serves where hwloc's -dev
# package is missing, as in a pip build on a machine without HPC packages;
# PyPI has no hwloc wheel. It reads the node and its PCI devices from Linux's
# /sys itself: no libxml2, libpciaccess, libudev, CUDA or NVML.
#
# PGS_HWLOC: SYSTEM (required, through pkg-config), BUNDLED (always the
# release), AUTO (the system's when pkg-config finds it). Sets PGS_HWLOC_FROM to "system" or "bundled".
set(PGS_HWLOC AUTO CACHE STRING "hwloc: SYSTEM, BUNDLED (third_party/hwloc, built here) or AUTO (the system's when found)")
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
  set(_release hwloc-2.9.0)
  set(_prefix ${CMAKE_CURRENT_BINARY_DIR}/third_party/hwloc)
  set(_library ${_prefix}/lib/${CMAKE_STATIC_LIBRARY_PREFIX}hwloc${CMAKE_STATIC_LIBRARY_SUFFIX})
  ExternalProject_Add(pgs_hwloc_build
    URL ${PROJECT_SOURCE_DIR}/third_party/hwloc/${_release}.tar.bz2
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
  message(STATUS "hwloc: no system hwloc >= 2.0 (PGS_HWLOC=${PGS_HWLOC}): building ${_release} from third_party/hwloc")
endif()
