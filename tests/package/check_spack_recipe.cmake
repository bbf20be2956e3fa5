# The Spack recipe (spack/packages/pgstrategy/package.py) read against this
# build, without Spack: it offers the main branch, and any numbered version it
# offers is a published release it can verify (a sha256 or a commit, not a bare
# tag) no newer than this build; it asks for the CMake this project requires,
# and sets every PGS_ENABLE_* option of the project (an option left at AUTO
# would build whatever the machine happens to have) and none it lacks; and the
# README's `spack external find` line names every dependency of the default
# spec (compilers aside), so that the documented install downloads nothing.
#   cmake -DRECIPE=<package.py> -DCMAKELISTS=<top CMakeLists.txt> -DREADME=<README.md>
#         -DVERSION=<x.y.z> -DCMAKE_MINIMUM=<x.y> -P check_spack_recipe.cmake
cmake_minimum_required(VERSION 3.21)
file(READ ${RECIPE} recipe)
file(READ ${CMAKELISTS} cmakelists)
file(READ ${README} readme)
set(failures "")

# The project's options: set(PGS_ENABLE_X AUTO CACHE ...) or option(PGS_ENABLE_X ...).
string(REGEX MATCHALL "(set|option)\\((PGS_ENABLE_[A-Z_]+)[ \n]" declared "${cmakelists}")
string(REGEX REPLACE "(set|option)\\((PGS_ENABLE_[A-Z_]+)[ \n]" "\\2" options "${declared}")
if(NOT options)
  message(FATAL_ERROR "no PGS_ENABLE_* options found in ${CMAKELISTS}")
endif()

if(NOT recipe MATCHES "version\\(\"main\", *branch=\"main\"")
  list(APPEND failures "no version(\"main\", branch=\"main\")")
endif()
string(REGEX MATCHALL "version\\(\"[0-9][^\"]*\"[^)]*\\)" numbered "${recipe}")
set(releases "")
foreach(line IN LISTS numbered)
  string(REGEX MATCH "\"([^\"]+)\"" _ "${line}")
  set(v ${CMAKE_MATCH_1})
  list(APPEND releases ${v})
  if(NOT line MATCHES "(sha256|commit)=")
    list(APPEND failures "version(\"${v}\") has neither a sha256 nor a commit: a release must be verifiable")
  endif()
  if(v VERSION_GREATER VERSION)
    list(APPEND failures "version(\"${v}\") is newer than this build (${VERSION})")
  endif()
endforeach()
if(releases)
  list(JOIN releases ", " releases)
else()
  set(releases "no release")
endif()

if(recipe MATCHES "depends_on\\(\"cmake@([0-9.]+):\"")
  if(NOT CMAKE_MATCH_1 VERSION_EQUAL CMAKE_MINIMUM)
    list(APPEND failures "depends_on(\"cmake@${CMAKE_MATCH_1}:\"), but CMakeLists.txt requires ${CMAKE_MINIMUM}")
  endif()
else()
  list(APPEND failures "no depends_on(\"cmake@X.Y:\")")
endif()

string(REGEX MATCHALL "define(_from_variant)?\\(\"PGS_ENABLE_[A-Z_]+\"" defines "${recipe}")
string(REGEX REPLACE "define(_from_variant)?\\(\"(PGS_ENABLE_[A-Z_]+)\"" "\\2" set_by_recipe "${defines}")
foreach(option IN LISTS options)
  if(NOT option IN_LIST set_by_recipe)
    list(APPEND failures "${option} is not set by the recipe")
  endif()
endforeach()
list(JOIN options ", " declared_text)
foreach(option IN LISTS set_by_recipe)
  if(NOT option IN_LIST options)
    list(APPEND failures "the recipe sets ${option}, which the project does not have (it has: ${declared_text})")
  endif()
endforeach()

# The default spec's dependencies: unconditional ones and those of variants on
# by default. Virtual packages name what provides them here.
string(REGEX MATCHALL "variant\\(\"([a-z_]+)\", *default=True" on_variants "${recipe}")
string(REGEX REPLACE "variant\\(\"([a-z_]+)\", *default=True" "\\1" on_variants "${on_variants}")
if(NOT readme MATCHES "spack external find ([^#\n]+)")
  list(APPEND failures "the README has no `spack external find` line")
endif()
separate_arguments(externals UNIX_COMMAND "${CMAKE_MATCH_1}")
string(REGEX MATCHALL "depends_on\\(\"[a-z0-9_-]+[^\n]*" deps "${recipe}")
set(provided_by_mpi mpich)
set(provided_by_pkgconfig pkgconf)
foreach(dep IN LISTS deps)
  string(REGEX MATCH "depends_on\\(\"([a-z0-9_-]+)" _ "${dep}")
  set(name ${CMAKE_MATCH_1})
  if(name MATCHES "^(c|cxx|fortran)$")
    continue()  # compilers: spack compiler find
  endif()
  if(dep MATCHES "when=\"\\+([a-z_]+)\"")
    if(NOT CMAKE_MATCH_1 IN_LIST on_variants)
      continue()
    endif()
  elseif(dep MATCHES "when=")
    continue()
  endif()
  if(DEFINED provided_by_${name})
    set(name ${provided_by_${name}})
  endif()
  if(NOT name IN_LIST externals)
    list(APPEND failures "the default spec depends on ${name}, which the README's `spack external find` leaves out: "
                         "Spack would download and build it")
  endif()
endforeach()

if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "${RECIPE}:\n  ${text}")
endif()
list(JOIN set_by_recipe ", " text)
message(STATUS "spack recipe: main and ${releases} (this build: ${VERSION}), cmake@${CMAKE_MINIMUM}:, sets ${text}: OK")
