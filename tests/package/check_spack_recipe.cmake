# The Spack recipe (spack/packages/pgstrategy/package.py) read against this
# build, without Spack: it offers this release, asks for the CMake this project
# requires, and sets every PGS_ENABLE_* option of the project (an option left
# at AUTO would build whatever the machine happens to have) and none it lacks.
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

string(REPLACE "." "\\." version_re "${VERSION}")
if(NOT recipe MATCHES "version\\(\"${version_re}\"")
  list(APPEND failures "no version(\"${VERSION}\") for this release")
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
message(STATUS "spack recipe: version ${VERSION}, cmake@${CMAKE_MINIMUM}:, sets ${text}: OK")
