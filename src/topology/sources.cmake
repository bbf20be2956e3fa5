# The topology sources, relative to src/ (included by src/CMakeLists.txt).
# layout.cpp is listed by src/CMakeLists.txt itself.
set(PG_TOPOLOGY_SOURCES
  topology/binding.cpp
  topology/gpu_select.cpp
  topology/hwloc_machine.cpp
  topology/launcher.cpp
  topology/machine.cpp
)
