# The installed tools are clients of the installed libpgstrategy.so: each needs
# the shared library and defines none of its symbols (no second copy of the
# library inside the executable); only the header-only helpers may be
# compiled in (strings, src/util/text.h; pulls, src/util/copy.h).
#   cmake -DREADELF=<readelf> -DNM=<nm> -DTOOLS="<exe>;<exe>" -P check_tools_are_clients.cmake
foreach(tool IN LISTS TOOLS)
  execute_process(COMMAND ${READELF} -d ${tool} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT dynamic MATCHES "NEEDED[^\n]*libpgstrategy\\.so")
    message(FATAL_ERROR "${tool} does not link libpgstrategy.so:\n${dynamic}")
  endif()
  execute_process(COMMAND ${NM} --defined-only ${tool} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  string(REGEX MATCHALL "[^\n]* [TtDdBbRr] (pg_[a-z_0-9]+|_ZN2pg[^\n]*)" own "${symbols}")
  list(FILTER own EXCLUDE REGEX "_ZN2pg(4text|[0-9]+pull)")  # the header-only helpers (util/text.h; util/copy.h, pg::pull*)
  if(NOT rc EQUAL 0 OR own)
    message(FATAL_ERROR "${tool} defines the library's symbols itself: ${own}")
  endif()
  message(STATUS "${tool}: a client of libpgstrategy.so")
endforeach()
