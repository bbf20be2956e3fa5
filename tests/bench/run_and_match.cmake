# Runs one command and checks its exit status and output.
#   cmake -DCOMMAND=<arg|arg|...> -DEXPECT_RC=<n> [-DEXPECT_REGEX=<regex>]
#         [-DREJECT_REGEX=<regex>] -P run_and_match.cmake
# Arguments are separated by '|' so lists survive add_test. Used for what
# CTest's own properties cannot say at once: "exits with 2 AND says why".
string(REPLACE "|" ";" _cmd "${COMMAND}")
execute_process(COMMAND ${_cmd} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err
                TIMEOUT 100)
set(_all "${_out}${_err}")
message("${_all}")
if(NOT "${_rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit status '${_rc}', expected ${EXPECT_RC}")
endif()
if(DEFINED EXPECT_REGEX AND NOT _all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}'")
endif()
if(DEFINED REJECT_REGEX AND _all MATCHES "${REJECT_REGEX}")
  message(FATAL_ERROR "output matches '${REJECT_REGEX}'")
endif()
