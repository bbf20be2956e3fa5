# pg_add_mpi_test(<name> [SOURCES <files...> | TARGET <existing>] NPROCS <n...>
#                 [LIBRARIES <libs...>] [ENVIRONMENT <VAR=value...>]
#                 [ARGS <args...>] [TIMEOUT <seconds>] [LABELS <labels...>]
#                 [RUN_SERIAL] [SKIP_RETURN_CODE <code>])
#
# Builds the executable <name> from SOURCES (or runs TARGET, an executable
# built before, e.g. the same test under other settings) and adds a CTest test <name>.np<N> for each N in NPROCS, run through FindMPI's
# launcher. Every test gets PROCESSORS, TIMEOUT and the "mpi" label.
function(pg_add_mpi_test name)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT;SKIP_RETURN_CODE;TARGET"
                        "SOURCES;NPROCS;LIBRARIES;ENVIRONMENT;ARGS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET ${name})
    add_executable(${name} ${ARG_SOURCES})
    target_link_libraries(${name} PRIVATE pgstrategy MPI::MPI_C pg_test_support ${ARG_LIBRARIES})
  endif()
  foreach(np IN LISTS ARG_NPROCS)
    set(test ${name}.np${np})
    add_test(NAME ${test}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS}
                     $<TARGET_FILE:${ARG_TARGET}> ${MPIEXEC_POSTFLAGS} ${ARG_ARGS})
    set_tests_properties(${test} PROPERTIES
      PROCESSORS ${np} TIMEOUT ${ARG_TIMEOUT} LABELS "mpi;${ARG_LABELS}"
      ENVIRONMENT "PG_TEST_WATCHDOG=${ARG_TIMEOUT};${ARG_ENVIRONMENT}")
    if(ARG_RUN_SERIAL)
      set_tests_properties(${test} PROPERTIES RUN_SERIAL ON)
    endif()
    if(DEFINED ARG_SKIP_RETURN_CODE)
      set_tests_properties(${test} PROPERTIES SKIP_RETURN_CODE ${ARG_SKIP_RETURN_CODE})
    endif()
  endforeach()
endfunction()
