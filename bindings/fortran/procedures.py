"""The communication calls of include/pg_strategy.h, as module pgstrategy binds them: the
build's gen_binding.py writes their C entry points and Fortran subroutines from this table,
and tests/fortran/check_binding_header.py checks it against the header.

`args`: the C arguments after the handle `s`, in C order, named as in the header (the
Fortran keywords); KINDS gives their kinds, or `name:kind`:
  in, out, inout     a buffer the call reads, writes, or both: type(*), dimension(..)
  count              default integer or integer(c_size_t); a negative one is refused
  sendcounts, sdispls, recvcounts, rdispls: an integer(c_size_t) array, one entry per rank
  dtype, op, int     a default integer (root, peer, tag, ...)
<buffer>=: the elements it must hold: "n" (the count n), "n * size" (times the number of
  ranks), "blocks(c, d)" (to the end of the last nonempty block of counts c at displacements
  d), "sum(c)" (the sum of the entries of c), "c[rank]" (this rank's entry)
root_only: the buffers and arrays used at the root only (NULL elsewhere)
in_place: the arguments (of rank, size and the call's) of its in-place layout pg_in_place_<name>
  (in_place.h, included by pgstrategy_f.c); the same array passed as both buffers is then in place
in_place_holds_both: in place, the one array must hold what both buffers need
nonblocking=False: the header has no pg_i<name>
To add a call: declare it in the header, add it here, rebuild; test it in tests/fortran.
"""

KINDS = {"sendbuf": "in", "recvbuf": "out", "count": "count", "sendcount": "count", "recvcount": "count",
         "dtype": "dtype", "op": "op", "root": "int", "peer": "int", "tag": "int", "dest": "int", "source": "int",
         **{name: name for name in ("sendcounts", "sdispls", "recvcounts", "rdispls")}}

# The C functions the module calls itself, bound as c_<name without pg_>. QUERIES, a property of
# the strategy (an int, or a string), are also module functions of their own name.
QUERIES = """pg_strategy_backend pg_strategy_device pg_strategy_rank pg_strategy_size
pg_strategy_local_rank pg_strategy_local_size pg_strategy_node_rank pg_strategy_node_count"""
LIBRARY = QUERIES + """ pg_status_name pg_version pg_backends_list pg_strategy_split pg_strategy_destroy pg_strategy_abort
pg_strategy_describe pg_strategy_set_stream pg_mem_free"""

CALLS = [
    dict(name="allreduce", args="sendbuf recvbuf count dtype op",
         sendbuf="count", recvbuf="count", in_place=""),
    dict(name="broadcast", args="buf:inout count dtype root", buf="count"),
    dict(name="reduce", args="sendbuf recvbuf count dtype op root", root_only="recvbuf",
         sendbuf="count", recvbuf="count", in_place="rank, root"),
    dict(name="allgather", args="sendbuf recvbuf sendcount dtype",
         sendbuf="sendcount", recvbuf="sendcount * size", in_place="rank, sendcount"),
    dict(name="reduce_scatter", args="sendbuf recvbuf recvcount dtype op",
         sendbuf="recvcount * size", recvbuf="recvcount", in_place="rank, recvcount"),
    dict(name="alltoall", args="sendbuf recvbuf count dtype",
         sendbuf="count * size", recvbuf="count * size", in_place=""),
    dict(name="gather", args="sendbuf recvbuf sendcount dtype root", root_only="recvbuf",
         sendbuf="sendcount", recvbuf="sendcount * size", in_place="rank, root, sendcount"),
    dict(name="scatter", args="sendbuf recvbuf recvcount dtype root", root_only="sendbuf",
         sendbuf="recvcount * size", recvbuf="recvcount", in_place="rank, root, recvcount"),
    dict(name="barrier", args=""),
    dict(name="allgatherv", args="sendbuf sendcount recvbuf recvcounts displs:rdispls dtype",
         sendbuf="sendcount", recvbuf="blocks(recvcounts, displs)", in_place="rank, displs"),
    dict(name="reduce_scatterv", args="sendbuf recvbuf recvcounts dtype op",
         sendbuf="sum(recvcounts)", recvbuf="recvcounts[rank]", in_place="rank, recvcounts"),
    dict(name="alltoallv", args="sendbuf sendcounts sdispls recvbuf recvcounts rdispls dtype",
         sendbuf="blocks(sendcounts, sdispls)", recvbuf="blocks(recvcounts, rdispls)",
         in_place="", in_place_holds_both=True),
    dict(name="gatherv", args="sendbuf sendcount recvbuf recvcounts displs:rdispls dtype root",
         root_only="recvbuf recvcounts displs", sendbuf="sendcount",
         recvbuf="blocks(recvcounts, displs)", in_place="rank, root, displs"),
    dict(name="scatterv", args="sendbuf sendcounts displs:sdispls recvbuf recvcount dtype root",
         root_only="sendbuf sendcounts displs", sendbuf="blocks(sendcounts, displs)",
         recvbuf="recvcount", in_place="rank, root, displs"),
    dict(name="send", args="buf:in count dtype peer tag", buf="count"),
    dict(name="recv", args="buf:out count dtype peer tag", buf="count"),
    dict(name="sendrecv", args="sendbuf sendcount dest recvbuf recvcount source dtype tag",
         sendbuf="sendcount", recvbuf="recvcount", nonblocking=False),
]
