# The layering the sources keep (README.md, "Repository layout"):
# - the core, the topology code, the bootstrap (src/launch) and the shared
#   helpers (src/cuda, src/mpi)
#   include no backend;
# - no backend includes another backend's headers (a backend folder can be
#   removed with its line in src/backends/builtins.cpp);
# - the tools include the public headers and, of the library's sources, only
#   the header-only string helpers (src/core/text.h).
#   cmake -DSOURCE_DIR=<repository> -P check_layering.cmake
set(problems "")
# Reports each `#include "..."` of `files` that matches `bad` and not `allowed`.
function(check files bad allowed why)
  foreach(file IN LISTS files)
    file(STRINGS ${file} includes REGEX "^#include \"")
    foreach(line IN LISTS includes)
      if(line MATCHES "${bad}" AND NOT line MATCHES "${allowed}")
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
        string(APPEND problems "\n  ${rel}: ${line} (${why})")
      endif()
    endforeach()
  endforeach()
  set(problems "${problems}" PARENT_SCOPE)
endfunction()

foreach(dir core topology cuda mpi launch)
  file(GLOB_RECURSE files ${SOURCE_DIR}/src/${dir}/*.h ${SOURCE_DIR}/src/${dir}/*.cpp)
  check("${files}" "\"backends/" "^$" "src/${dir} includes no backend")
endforeach()
file(GLOB backends LIST_DIRECTORIES true ${SOURCE_DIR}/src/backends/*)
foreach(dir IN LISTS backends)
  if(IS_DIRECTORY ${dir})
    get_filename_component(name ${dir} NAME)
    file(GLOB_RECURSE files ${dir}/*.h ${dir}/*.cpp)
    check("${files}" "\"backends/" "\"backends/${name}/" "a backend includes only its own headers")
  endif()
endforeach()
file(GLOB_RECURSE files ${SOURCE_DIR}/tools/*.h ${SOURCE_DIR}/tools/*.cpp)
check("${files}" "\"(backends|topology|cuda|mpi|core)/" "\"core/text\\.h\""
      "tools are clients: public headers and core/text.h only")
if(problems)
  message(FATAL_ERROR "layering broken:${problems}")
endif()
message(STATUS "layering: the core and shared helpers include no backend, no backend another's "
               "headers, the tools only public ones")
