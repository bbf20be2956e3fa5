# The bootstrap's sources, relative to src/ (included by src/CMakeLists.txt):
# bringing MPI up without an MPI launcher (docs/launch.md).
set(PG_LAUNCH_SOURCES
  launch/auth.cpp
  launch/bootstrap.cpp
  launch/c_api.cpp
  launch/job.cpp
  launch/net.cpp
  launch/pmi.cpp
  launch/rendezvous.cpp
  launch/settings.cpp
  launch/tcpstore.cpp
  launch/wire.cpp
)
