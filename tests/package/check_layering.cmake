# The layers of src/ (docs/architecture.md), bottom up, and what each may
# include besides its own folder and the public headers:
#   util                                  nothing else
#   cuda, mpi, topology, launch           util
#   core                                  util, cuda, mpi, topology, launch
#   backends/<name>                       everything above, never another backend
#   api                                   everything
# The build enforces the same rule (each layer's include path holds only the
# layers below it); this check also reads the files a build leaves out (the
# CUDA sources of a build without CUDA) and the tools, which include only the
# public headers and the header-only helpers: strings (src/util/text.h) and
# pulls from a peer's cache (src/util/copy.h, for pg-bench's bound).
#   cmake -DSOURCE_DIR=<repository> -P check_layering.cmake
cmake_minimum_required(VERSION 3.21)
set(problems "")
# Reports each `#include "<folder>/..."` of `files` whose folder is not in `allowed`.
function(check files allowed why)
  foreach(file IN LISTS files)
    file(STRINGS ${file} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "^#include \"([a-z_]+(/[a-z_]+)?)/" _ "${line}")
      set(folder ${CMAKE_MATCH_1})
      # backends/<name>/x.h names its backend; other folders are one level.
      if(NOT folder MATCHES "^backends/")
        string(REGEX MATCH "^[a-z_]+" folder "${folder}")
      endif()
      if(NOT folder IN_LIST allowed)
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
        string(APPEND problems "\n  ${rel}: ${line} (${why})")
      endif()
    endforeach()
  endforeach()
  set(problems "${problems}" PARENT_SCOPE)
endfunction()

function(check_folder folder allowed why)
  file(GLOB_RECURSE files ${SOURCE_DIR}/src/${folder}/*.h ${SOURCE_DIR}/src/${folder}/*.cpp)
  check("${files}" "${folder};${allowed}" "${why}")
  set(problems "${problems}" PARENT_SCOPE)
endfunction()

set(middle cuda mpi topology launch)
check_folder(util "" "util is the bottom layer")
foreach(dir IN LISTS middle)
  check_folder(${dir} "util" "src/${dir} includes only util")
endforeach()
check_folder(core "util;${middle}" "the core includes no backend and no C entry point")
file(GLOB backends LIST_DIRECTORIES true ${SOURCE_DIR}/src/backends/*)
foreach(dir IN LISTS backends)
  if(IS_DIRECTORY ${dir})
    get_filename_component(name ${dir} NAME)
    check_folder(backends/${name} "util;${middle};core"
                 "a backend includes the layers below it and only its own backend folder")
  endif()
endforeach()
file(GLOB_RECURSE files ${SOURCE_DIR}/tools/*.h ${SOURCE_DIR}/tools/*.cpp)
# Hidden folders hold what the comparison scripts download or unpack (other
# MPIs, other revisions' sources), not the tools.
list(FILTER files EXCLUDE REGEX "/tools/.*/\\.[^/]+/")
foreach(file IN LISTS files)
  file(STRINGS ${file} includes REGEX "^#include \"[a-z_]+/")
  foreach(line IN LISTS includes)
    if(NOT line MATCHES "^#include \"util/(text|copy)\\.h\"")
      file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
      string(APPEND problems "\n  ${rel}: ${line} (tools are clients: public headers, util/text.h and util/copy.h only)")
    endif()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "layering broken:${problems}")
endif()
message(STATUS "layering: util, then cuda/mpi/topology/launch, then core, then each backend alone, "
               "then api; the tools only public headers")
