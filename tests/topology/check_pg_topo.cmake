# Runs pg-topo under mpiexec for one CASE and checks its exit status and output.
#   cmake -DCASE=<case> -DNP=<n> -DMPIEXEC=<mpiexec> -DNPFLAG=-n [-DPREFLAGS=...]
#         -DPG_TOPO=<exe> -DDATA=<tests/data> -DSRUN_MPI_PLUGIN=pmi2|pmix -P check_pg_topo.cmake
foreach(var IN ITEMS PGS_RANKS_PER_NODE PGS_TOPOLOGY_XML PGS_BIND PGS_BACKEND CUDA_VISIBLE_DEVICES
                    PMI_RANK PMI_SIZE MPI_LOCALRANKID OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE
                    SLURM_PROCID SLURM_NTASKS SLURM_STEP_NUM_TASKS SLURM_STEP_ID SLURM_LOCALID
                    SLURM_MPI_TYPE SLURM_STEP_TASKS_PER_NODE SLURM_TASKS_PER_NODE
                    RANK WORLD_SIZE)
  unset(ENV{${var}})
endforeach()
set(launch ${MPIEXEC} ${NPFLAG} ${NP} ${PREFLAGS})

set(expect_ok TRUE)
if(CASE STREQUAL "2x2")          # 4 ranks, 2 virtual nodes of 2
  set(ENV{PGS_RANKS_PER_NODE} 2)
  set(patterns
    "rank 0: host=[^ ]+ node=0 local=0/2 "
    "rank 1: host=[^ ]+ node=0 local=1/2 "
    "rank 2: host=[^ ]+ node=1 local=0/2 "
    "rank 3: host=[^ ]+ node=1 local=1/2 "
    "device cpu: backend mpi \\(device default\\): available"
    "device cuda: backend nccl \\(device default\\): "
    "plan: 2 nodes x 2 ranks per node \\(regular; virtual nodes of PGS_RANKS_PER_NODE=2"
    "node 0: ranks 0 1\n"
    "node 1: ranks 2 3\n"
    "rail 0: ranks 0 2\n"
    "rail 1: ranks 1 3\n")
elseif(CASE STREQUAL "2p1")      # 3 ranks, nodes of 2 and 1
  set(ENV{PGS_RANKS_PER_NODE} 2)
  set(patterns
    "rank 2: host=[^ ]+ node=1 local=0/1 "
    "plan: 2 nodes with 2\\+1 ranks \\(irregular"
    "rail 0: ranks 0 2\n"
    "rail 1: ranks 1\n")
elseif(CASE STREQUAL "xml_numa") # the 8-GPU node from XML, bound near each GPU
  set(ENV{PGS_RANKS_PER_NODE} 2)
  set(ENV{PGS_TOPOLOGY_XML} ${DATA}/two_socket_8gpu_4nic.xml)
  set(ENV{PGS_BIND} numa)
  set(ENV{CUDA_VISIBLE_DEVICES} 5,2)
  set(patterns
    "2 packages, 8 cores, 2 NUMA nodes, 8 GPUs, 5 NICs"
    "rank 0: [^\n]* bind=numa:1 cpus 4-7 [^\n]*\\[from XML, not applied\\] gpu=cuda:0 0000:84:00.0 NUMA 1 nic=mlx5_2/ib2 \\(same PCI switch\\)"
    "rank 1: [^\n]* bind=numa:0 cpus 0-3 [^\n]*\\[from XML, not applied\\] gpu=cuda:1 0000:12:00.0 NUMA 0 nic=mlx5_1/ib1 \\(same PCI switch\\)")
elseif(CASE STREQUAL "singleton_slurm") # srun without --mpi=pmi2: a 1-process MPI job
  set(launch)                     # no mpiexec: an MPI singleton
  set(ENV{SLURM_PROCID} 1)
  set(ENV{SLURM_NTASKS} 4)
  set(ENV{SLURM_LOCALID} 1)
  set(ENV{SLURM_STEP_ID} 0)
  # A world of 1 while the launcher says 4 is an error (docs/launch.md), with the advice.
  set(expect_ok FALSE)
  set(patterns
    "cannot create a cpu strategy: MPI sees a world of 1 process, but the launcher \\(slurm\\) started 4 processes"
    "srun ran without an MPI plugin"
    "run 'srun --mpi=${SRUN_MPI_PLUGIN}")
elseif(CASE STREQUAL "bad_ranks_per_node")
  set(ENV{PGS_RANKS_PER_NODE} abc)
  set(expect_ok FALSE)
  set(patterns "PGS_RANKS_PER_NODE")
elseif(CASE STREQUAL "bad_xml")
  set(ENV{PGS_TOPOLOGY_XML} ${DATA}/no_such_topology.xml)
  set(expect_ok FALSE)
  set(patterns "PGS_TOPOLOGY_XML='[^']*no_such_topology.xml'")
elseif(CASE STREQUAL "fifo_xml")
  # hwloc would block forever opening a FIFO: it is refused before that.
  set(fifo ${CMAKE_CURRENT_BINARY_DIR}/pg_topo_fifo.xml)
  file(REMOVE ${fifo})
  execute_process(COMMAND mkfifo ${fifo})
  set(ENV{PGS_TOPOLOGY_XML} ${fifo})
  set(expect_ok FALSE)
  set(patterns "PGS_TOPOLOGY_XML='[^']*pg_topo_fifo.xml' is not a regular file")
else()
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()

execute_process(COMMAND ${launch} ${PG_TOPO}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 75)
message("pg-topo exit status: ${rc}\n--- stdout\n${out}--- stderr\n${err}---")
set(all "${out}${err}")
if(expect_ok AND NOT rc STREQUAL "0")
  message(FATAL_ERROR "pg-topo failed (${rc})")
elseif(NOT expect_ok AND (rc STREQUAL "0" OR NOT rc MATCHES "^[0-9]+$"))
  message(FATAL_ERROR "pg-topo should have exited non-zero (got '${rc}')")
endif()
foreach(p IN LISTS patterns)
  if(NOT all MATCHES "${p}")
    message(FATAL_ERROR "output does not match: ${p}")
  endif()
endforeach()
