# pg_find_torch(<python> <required>)
# Finds the torch that <python> imports and makes the imported target
# pgs::torch (headers, libc10, libtorch_cpu, libtorch_python, torch's C++ ABI
# setting). Sets PGS_TORCH_FOUND and PGS_TORCH_VERSION, and PGS_TORCH_REASON
# when not found.
#
# It asks torch itself (torch.utils.cpp_extension, what torch's own extension
# builder uses) rather than TorchConfig.cmake: the config of a CUDA wheel stops
# the configure with a fatal error where no CUDA toolkit is installed, and
# nothing here needs it (the CUDA path goes through c10's device-generic
# stream and event interfaces).
# Not found, for <reason>: an error when required, else PGS_TORCH_REASON.
macro(_pg_torch_not_found reason)
  if(required)
    message(FATAL_ERROR "${reason}")
  endif()
  set(PGS_TORCH_REASON "${reason}" PARENT_SCOPE)
  return()
endmacro()

function(pg_find_torch python required)
  set(PGS_TORCH_FOUND OFF PARENT_SCOPE)
  set(_probe "import torch; from torch.utils import cpp_extension as c; \
print(','.join(c.include_paths())); print(c.library_paths()[0]); \
print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__)")
  execute_process(COMMAND "${python}" -c "${_probe}"
    OUTPUT_VARIABLE _out ERROR_VARIABLE _error RESULT_VARIABLE _result OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _result EQUAL 0 AND DEFINED ENV{PYTHONPATH})
    # pip's isolated build environment hides the packages of the environment
    # pip runs in (through PYTHONPATH and PYTHONNOUSERSITE): the torch to build
    # for is the one installed there, beside which the package will run.
    execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE "${python}" -c "${_probe}"
      OUTPUT_VARIABLE _out ERROR_VARIABLE _error RESULT_VARIABLE _result OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  if(NOT _result EQUAL 0)
    string(STRIP "${_error}" _error)
    string(REGEX REPLACE ".*\n" "" _error "${_error}")
    _pg_torch_not_found("'${python}' cannot import torch (${_error}). Build for a Python that has torch: \
install torch first (pip install torch), or -DPGS_TORCH_PYTHON=<venv>/bin/python")
  endif()
  string(REPLACE "\n" ";" _out "${_out}")
  list(POP_FRONT _out _includes_joined _lib_dir _abi _version)
  string(REPLACE "," ";" _includes "${_includes_joined}")
  foreach(_name c10 torch_cpu torch_python)
    find_library(PGS_TORCH_${_name} ${_name} PATHS "${_lib_dir}" NO_DEFAULT_PATH)
    if(NOT PGS_TORCH_${_name})
      _pg_torch_not_found("torch ${_version} at ${_lib_dir} has no lib${_name}.so")
    endif()
  endforeach()
  if(NOT TARGET pgs::torch)
    add_library(pgs::torch INTERFACE IMPORTED GLOBAL)
    set_target_properties(pgs::torch PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${_includes}"
      INTERFACE_LINK_LIBRARIES "${PGS_TORCH_c10};${PGS_TORCH_torch_cpu};${PGS_TORCH_torch_python}"
      INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=${_abi}")
  endif()
  message(STATUS "pgstrategy_torch: torch ${_version} from ${_lib_dir}")
  set(PGS_TORCH_FOUND ON PARENT_SCOPE)
  set(PGS_TORCH_VERSION "${_version}" PARENT_SCOPE)
endfunction()
