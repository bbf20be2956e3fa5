// The collectives over several tensors, or blocks of different sizes per
// rank: joined into one buffer for the library (tensors.h) and split back into
// torch's tensors once finished. allreduce over a list, allgather and
// reduce_scatter over lists of uneven sizes (the library's v forms), all_to_all
// with uneven splits (expert dispatch), and FSDP2's coalesced forms.
#include <string>
#include <utility>

#include "errors.h"
#include "process_group.h"
#include "tensors.h"

namespace pgstrategy_torch {
namespace {

// The library's all_to_all of the blocks `in` and `out` lay out: one alltoall
// where every rank knows the blocks are equal (`even_everywhere`), else an
// alltoallv (expert dispatch). The choice must be every rank's: an alltoall
// does not match an alltoallv, and a rank whose own blocks happen to be equal
// cannot tell whether its peers' are.
Call alltoall_call(const void *send, void *recv, const Layout &in, const Layout &out, pg_dtype dt,
                   bool even_everywhere) {
  if (even_everywhere) {
    const std::size_t n = in.counts[0];
    return [=](pg_strategy *s, pg_work **w) {
      return w ? pg_ialltoall(s, send, recv, n, dt, w) : pg_alltoall(s, send, recv, n, dt);
    };
  }
  return [=](pg_strategy *s, pg_work **w) {
    const std::size_t *sc = in.counts.data(), *sd = in.displs.data(), *rc = out.counts.data(), *rd = out.displs.data();
    return w ? pg_ialltoallv(s, send, sc, sd, recv, rc, rd, dt, w) : pg_alltoallv(s, send, sc, sd, recv, rc, rd, dt);
  };
}

// The tensors of a coalesced call: pairs of one dtype and device, the output
// `out_per_in` times the input (allgather) or the input `in_per_out` times the
// output (reduce_scatter).
void check_coalesced(const std::vector<at::Tensor> &outputs, const std::vector<at::Tensor> &inputs, int64_t out_per_in,
                     int64_t in_per_out, const char *what) {
  if (inputs.empty() || inputs.size() != outputs.size())
    raise(c10::str("pgstrategy ", what, ": expected as many outputs as inputs, at least one; got ", outputs.size(),
                   " and ", inputs.size()));
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    check_pair(outputs[k], inputs[k], what);
    if (inputs[k].scalar_type() != inputs[0].scalar_type() || inputs[k].device() != inputs[0].device())
      raise(c10::str("pgstrategy ", what, ": every tensor must be ", inputs[0].scalar_type(), " on ", inputs[0].device(),
                     "; tensor ", k, " is ", inputs[k].scalar_type(), " on ", inputs[k].device()));
    if (outputs[k].numel() * in_per_out != inputs[k].numel() * out_per_in)
      raise(c10::str("pgstrategy ", what, ": tensor ", k, ": the ", out_per_in > 1 ? "output" : "input", " must hold ",
                     out_per_in > 1 ? out_per_in : in_per_out, " x ", out_per_in > 1 ? inputs[k].numel() : outputs[k].numel(),
                     " elements; got ", out_per_in > 1 ? outputs[k].numel() : inputs[k].numel()));
  }
}

// The one list (a tensor per rank, of any sizes) of allgather's output or
// reduce_scatter's input, whose place `rank` must hold as many elements as
// this rank's own tensor.
Layout list_layout(const std::vector<std::vector<at::Tensor>> &lists, const at::Tensor &mine, int rank, int size,
                   const char *what, const char *side) {
  if (lists.size() != 1) raise(c10::str("pgstrategy ", what, ": expected one ", side, " list; got ", lists.size()));
  check_list(lists[0], static_cast<std::size_t>(size), mine, what, false);
  Layout l = layout_of(lists[0]);
  const std::size_t place = l.counts[static_cast<std::size_t>(rank)];
  if (place != count_of(mine))
    raise(c10::str("pgstrategy ", what, ": this rank's tensor has ", mine.numel(), " elements but its place in the ",
                   side, " list (", rank, ") has ", place));
  return l;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroup::allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                                                 const c10d::AllreduceCoalescedOptions &opts) {
  if (tensors.empty()) raise("pgstrategy allreduce_coalesced: no tensors");
  const at::Tensor &first = checked(tensors[0], "allreduce_coalesced");
  for (const at::Tensor &t : tensors) {
    checked(t, "allreduce_coalesced");
    if (t.scalar_type() != first.scalar_type() || t.device() != first.device())
      raise(c10::str("pgstrategy allreduce_coalesced: every tensor must be ", first.scalar_type(), " on ",
                     first.device(), "; got ", t.scalar_type(), " on ", t.device()));
  }
  Operation op = operation("allreduce_coalesced", c10d::OpType::ALLREDUCE_COALESCED, first.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, first, op.name);
  at::Tensor flat = joined(op, tensors);
  premultiply(opts.reduceOp, flat);
  copy_back(op, flat, tensors);
  op.outputs = tensors;
  void *buf = flat.data_ptr();
  const std::size_t n = count_of(flat);
  const pg_dtype dt = dtype_of(first, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallreduce(s, buf, buf, n, dt, rop, w) : pg_allreduce(s, buf, buf, n, dt, rop);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                                       std::vector<at::Tensor> &inputs,
                                                       const c10d::AllgatherOptions &opts) {
  const at::Tensor &in = single(inputs, "allgather");
  // Tensors of different sizes per rank: an allgatherv into the joined list.
  const Layout l = list_layout(outputs, in, rank_, size_, "allgather", "output");
  Operation op = operation("allgather", c10d::OpType::ALLGATHER, in.device(), opts.timeout);
  const void *send = readable(op, in).data_ptr();
  void *recv = split_back(op, outputs[0]).data_ptr();
  op.outputs = outputs[0];
  const std::size_t n = count_of(in);
  const pg_dtype dt = dtype_of(in, op.name);
  if (!l.even)
    return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
      const std::size_t *c = l.counts.data(), *d = l.displs.data();
      return w ? pg_iallgatherv(s, send, n, recv, c, d, dt, w) : pg_allgatherv(s, send, n, recv, c, d, dt);
    });
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallgather(s, send, recv, n, dt, w) : pg_allgather(s, send, recv, n, dt);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::reduce_scatter(std::vector<at::Tensor> &outputs,
                                                            std::vector<std::vector<at::Tensor>> &inputs,
                                                            const c10d::ReduceScatterOptions &opts) {
  const at::Tensor &out = single(outputs, "reduce_scatter");
  // Tensors of different sizes per rank: a reduce_scatterv of the joined list.
  const Layout l = list_layout(inputs, out, rank_, size_, "reduce_scatter", "input");
  Operation op = operation("reduce_scatter", c10d::OpType::REDUCE_SCATTER, out.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, out, op.name);
  const at::Tensor in = joined(op, inputs[0]);
  premultiply(opts.reduceOp, in);
  const void *send = in.data_ptr();
  void *recv = writable(op, out).data_ptr();
  op.outputs = {out};
  const std::size_t n = count_of(out);
  const pg_dtype dt = dtype_of(out, op.name);
  if (!l.even)
    return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
      const std::size_t *c = l.counts.data();
      return w ? pg_ireduce_scatterv(s, send, recv, c, dt, rop, w) : pg_reduce_scatterv(s, send, recv, c, dt, rop);
    });
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ireduce_scatter(s, send, recv, n, dt, rop, w) : pg_reduce_scatter(s, send, recv, n, dt, rop);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::alltoall_base(at::Tensor &output, at::Tensor &input,
                                                           std::vector<int64_t> &output_splits,
                                                           std::vector<int64_t> &input_splits,
                                                           const c10d::AllToAllOptions &opts) {
  check_pair(output, input, "all_to_all_single");
  const Layout in = split_rows(input, input_splits, size_, "input");
  const Layout out = split_rows(output, output_splits, size_, "output");
  Operation op = operation("all_to_all_single", c10d::OpType::ALLTOALL_BASE, input.device(), opts.timeout);
  const void *send = readable(op, input).data_ptr();
  void *recv = writable(op, output).data_ptr();
  op.outputs = {output};
  const pg_dtype dt = dtype_of(input, op.name);
  // Without splits torch makes every rank cut its tensors into equal blocks.
  const bool even = input_splits.empty() && output_splits.empty();
  return launch(std::move(op), alltoall_call(send, recv, in, out, dt, even));
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::alltoall(std::vector<at::Tensor> &outputs,
                                                      std::vector<at::Tensor> &inputs,
                                                      const c10d::AllToAllOptions &opts) {
  if (inputs.empty()) raise("pgstrategy all_to_all: no input tensors");
  const at::Tensor &like = checked(inputs[0], "all_to_all");
  check_list(inputs, static_cast<std::size_t>(size_), like, "all_to_all", false);
  check_list(outputs, static_cast<std::size_t>(size_), like, "all_to_all", false);
  const Layout in = layout_of(inputs), out = layout_of(outputs);
  Operation op = operation("all_to_all", c10d::OpType::ALLTOALL, like.device(), opts.timeout);
  const void *send = joined(op, inputs).data_ptr();
  void *recv = split_back(op, outputs).data_ptr();
  op.outputs = outputs;
  const pg_dtype dt = dtype_of(like, op.name);
  // Any sizes (this rank cannot tell its peers'): the library's alltoallv
  // over the joined lists.
  return launch(std::move(op), alltoall_call(send, recv, in, out, dt, false));
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                                                                 std::vector<at::Tensor> &inputs,
                                                                 const c10d::AllgatherOptions &opts) {
  const char *what = "allgather_coalesced";
  if (inputs.empty()) raise(c10::str("pgstrategy ", what, ": no input tensors"));
  const at::Tensor &like = checked(inputs[0], what);
  if (outputs.size() != static_cast<std::size_t>(size_))
    raise(c10::str("pgstrategy ", what, ": expected an output list per rank (", size_, "); got ", outputs.size()));
  std::vector<at::Tensor> places;  // rank r's input k goes to outputs[r][k]
  for (const auto &list : outputs) {
    if (list.size() != inputs.size())
      raise(c10::str("pgstrategy ", what, ": every output list must hold one tensor per input (", inputs.size(),
                     "); got ", list.size()));
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      check_list({list[k]}, 1, inputs[k], what);
      places.push_back(list[k]);
    }
  }
  check_list(inputs, inputs.size(), like, what, false);
  // The inputs joined (N elements), one allgather of N per rank: rank r's
  // inputs land one after the other, in the order of its output list.
  Operation op = operation(what, c10d::OpType::ALLGATHER_COALESCED, like.device(), opts.timeout);
  const at::Tensor row = joined(op, inputs);
  const void *send = row.data_ptr();
  void *recv = split_back(op, places).data_ptr();
  op.outputs = places;
  const std::size_t n = count_of(row);
  const pg_dtype dt = dtype_of(like, what);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallgather(s, send, recv, n, dt, w) : pg_allgather(s, send, recv, n, dt);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allgather_into_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                                             std::vector<at::Tensor> &inputs,
                                                                             const c10d::AllgatherOptions &opts) {
  const char *what = "allgather_into_tensor_coalesced";
  check_coalesced(outputs, inputs, size_, 1, what);
  if (inputs.size() == 1) return _allgather_base(outputs[0], inputs[0], opts);
  // The inputs joined (N elements), one allgather of N per rank, then rank
  // r's piece of each input to its place in that input's output.
  Operation op = operation(what, c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, inputs[0].device(), opts.timeout);
  const at::Tensor row = joined(op, inputs);
  const void *send = row.data_ptr();
  void *recv = split_back(op, outputs, size_).data_ptr();
  op.outputs = outputs;
  const std::size_t n = count_of(row);
  const pg_dtype dt = dtype_of(inputs[0], what);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallgather(s, send, recv, n, dt, w) : pg_allgather(s, send, recv, n, dt);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::reduce_scatter_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                                             std::vector<at::Tensor> &inputs,
                                                                             const c10d::ReduceScatterOptions &opts) {
  const char *what = "reduce_scatter_tensor_coalesced";
  check_coalesced(outputs, inputs, 1, size_, what);
  if (inputs.size() == 1) return _reduce_scatter_base(outputs[0], inputs[0], opts);
  // Rank r's block of every input, joined, for r in rank order (M elements
  // per rank); one reduce_scatter of M; then this rank's M to the outputs.
  Operation op = operation(what, c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, inputs[0].device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, inputs[0], what);
  const at::Tensor in = joined(op, inputs, size_);
  premultiply(opts.reduceOp, in);
  const void *send = in.data_ptr();
  const at::Tensor row = split_back(op, outputs);
  void *recv = row.data_ptr();
  op.outputs = outputs;
  const std::size_t n = count_of(row);
  const pg_dtype dt = dtype_of(inputs[0], what);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ireduce_scatter(s, send, recv, n, dt, rop, w) : pg_reduce_scatter(s, send, recv, n, dt, rop);
  });
}

}  // namespace pgstrategy_torch
