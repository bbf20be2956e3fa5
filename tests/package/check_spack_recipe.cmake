# The Spack recipe (spack/packages/pgstrategy/package.py) read against this
# build, without Spack: it offers the main branch, and any numbered version it
# offers is a published release it can verify (a sha256 or a commit, not a bare
# tag) no newer than this build; it asks for the CMake this project requires,
# and sets every PGS_ENABLE_* option of the project (an option left at AUTO
# would build whatever the machine happens to have) and none it lacks.
#   cmake -DRECIPE=<package.py> -DCMAKELISTS=<top CMakeLists.txt> -DVERSION=<x.y.z>
#         -DCMAKE_MINIMUM=<x.y> -P check_spack_recipe.cmake
cmake_minimum_required(VERSION 3.21)
file(READ ${RECIPE} recipe)
file(READ ${CMAKELISTS} cmakelists)
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

if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "${RECIPE}:\n  ${text}")
endif()
list(JOIN set_by_recipe ", " text)
message(STATUS "spack recipe: main and ${releases} (this build: ${VERSION}), cmake@${CMAKE_MINIMUM}:, sets ${text}: OK")
