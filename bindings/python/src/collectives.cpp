// The collectives over one tensor per rank (or an even list at a root): each
// checks its tensors, stages them (tensors.h) and hands launch the library's
// call, blocking and nonblocking.
#include <string>
#include <utility>

#include "errors.h"
#include "process_group.h"
#include "tensors.h"

namespace pgstrategy_torch {

c10::intrusive_ptr<c10d::Work> ProcessGroup::broadcast(std::vector<at::Tensor> &tensors,
                                                       const c10d::BroadcastOptions &opts) {
  const at::Tensor &t = single(tensors, "broadcast");
  Operation op = operation("broadcast", c10d::OpType::BROADCAST, t.device(), opts.timeout);
  void *buf = writable(op, t).data_ptr();
  op.outputs = {t};
  const std::size_t n = count_of(t);
  const pg_dtype dt = dtype_of(t, op.name);
  const int root = static_cast<int>(opts.rootRank);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ibroadcast(s, buf, n, dt, root, w) : pg_broadcast(s, buf, n, dt, root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allreduce(std::vector<at::Tensor> &tensors,
                                                       const c10d::AllreduceOptions &opts) {
  const at::Tensor &t = single(tensors, "allreduce");
  Operation op = operation("allreduce", c10d::OpType::ALLREDUCE, t.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, t, op.name);
  const at::Tensor staged = writable(op, t);
  premultiply(opts.reduceOp, staged);
  void *buf = staged.data_ptr();
  op.outputs = {t};
  const std::size_t n = count_of(t);
  const pg_dtype dt = dtype_of(t, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallreduce(s, buf, buf, n, dt, rop, w) : pg_allreduce(s, buf, buf, n, dt, rop);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::reduce(std::vector<at::Tensor> &tensors,
                                                    const c10d::ReduceOptions &opts) {
  const at::Tensor &t = single(tensors, "reduce");
  Operation op = operation("reduce", c10d::OpType::REDUCE, t.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, t, op.name);
  const int root = static_cast<int>(opts.rootRank);
  const at::Tensor staged =
      root == rank_ ? writable(op, t) : readable(op, is_premul(opts.reduceOp) ? t.clone() : t);
  premultiply(opts.reduceOp, staged);
  void *buf = staged.data_ptr();
  void *recv = root == rank_ ? buf : nullptr;
  op.outputs = {t};
  const std::size_t n = count_of(t);
  const pg_dtype dt = dtype_of(t, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ireduce(s, buf, recv, n, dt, rop, root, w) : pg_reduce(s, buf, recv, n, dt, rop, root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::_allgather_base(at::Tensor &output, at::Tensor &input,
                                                             const c10d::AllgatherOptions &opts) {
  check_pair(output, input, "allgather_into_tensor");
  if (output.numel() != input.numel() * size_)
    raise(c10::str("pgstrategy allgather_into_tensor: the output must hold ", size_, " x ", input.numel(),
                   " elements; got ", output.numel()));
  Operation op = operation("allgather_into_tensor", c10d::OpType::_ALLGATHER_BASE, input.device(), opts.timeout);
  void *recv = writable(op, output).data_ptr();
  const void *send = readable(op, input).data_ptr();
  op.outputs = {output};
  const std::size_t n = count_of(input);
  const pg_dtype dt = dtype_of(input, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallgather(s, send, recv, n, dt, w) : pg_allgather(s, send, recv, n, dt);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                                  const c10d::ReduceScatterOptions &opts) {
  check_pair(output, input, "reduce_scatter_tensor");
  if (input.numel() != output.numel() * size_)
    raise(c10::str("pgstrategy reduce_scatter_tensor: the input must hold ", size_, " x ", output.numel(),
                   " elements; got ", input.numel()));
  Operation op = operation("reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE, output.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, output, op.name);
  const at::Tensor in = readable(op, is_premul(opts.reduceOp) ? input.clone() : input);
  premultiply(opts.reduceOp, in);
  const void *send = in.data_ptr();
  void *recv = writable(op, output).data_ptr();
  op.outputs = {output};
  const std::size_t n = count_of(output);
  const pg_dtype dt = dtype_of(output, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ireduce_scatter(s, send, recv, n, dt, rop, w) : pg_reduce_scatter(s, send, recv, n, dt, rop);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::gather(std::vector<std::vector<at::Tensor>> &outputs,
                                                    std::vector<at::Tensor> &inputs,
                                                    const c10d::GatherOptions &opts) {
  const at::Tensor &in = single(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  Operation op = operation("gather", c10d::OpType::GATHER, in.device(), opts.timeout);
  void *recv = nullptr;
  if (root == rank_) {
    if (outputs.size() != 1) raise(c10::str("pgstrategy gather: the root expects one output list; got ", outputs.size()));
    check_list(outputs[0], static_cast<std::size_t>(size_), in, "gather");
    recv = split_back(op, outputs[0]).data_ptr();
    op.outputs = outputs[0];
  } else if (!outputs.empty() && !outputs[0].empty()) {
    raise(c10::str("pgstrategy gather: only the root (rank ", root, ") takes an output list"));
  }
  const void *send = readable(op, in).data_ptr();
  const std::size_t n = count_of(in);
  const pg_dtype dt = dtype_of(in, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_igather(s, send, recv, n, dt, root, w) : pg_gather(s, send, recv, n, dt, root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::scatter(std::vector<at::Tensor> &outputs,
                                                     std::vector<std::vector<at::Tensor>> &inputs,
                                                     const c10d::ScatterOptions &opts) {
  const at::Tensor &out = single(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  Operation op = operation("scatter", c10d::OpType::SCATTER, out.device(), opts.timeout);
  const void *send = nullptr;
  if (root == rank_) {
    if (inputs.size() != 1) raise(c10::str("pgstrategy scatter: the root expects one input list; got ", inputs.size()));
    check_list(inputs[0], static_cast<std::size_t>(size_), out, "scatter");
    send = joined(op, inputs[0]).data_ptr();
  } else if (!inputs.empty() && !inputs[0].empty()) {
    raise(c10::str("pgstrategy scatter: only the root (rank ", root, ") takes an input list"));
  }
  void *recv = writable(op, out).data_ptr();
  op.outputs = {out};
  const std::size_t n = count_of(out);
  const pg_dtype dt = dtype_of(out, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iscatter(s, send, recv, n, dt, root, w) : pg_scatter(s, send, recv, n, dt, root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::point_to_point(std::vector<at::Tensor> &tensors, int peer, int tag,
                                                            c10d::OpType type) {
  const bool sending = type == c10d::OpType::SEND;
  const char *name = sending ? "send" : type == c10d::OpType::RECV ? "recv" : "recv_anysource";
  const at::Tensor &t = single(tensors, name);
  Operation op = operation(name, type, t.device(), c10d::kUnsetTimeout);
  void *buf = (sending ? readable(op, t) : writable(op, t)).data_ptr();
  op.outputs = {t};
  const std::size_t n = count_of(t);
  const pg_dtype dt = dtype_of(t, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    if (sending) return w ? pg_isend(s, buf, n, dt, peer, tag, w) : pg_send(s, buf, n, dt, peer, tag);
    return w ? pg_irecv(s, buf, n, dt, peer, tag, w) : pg_recv(s, buf, n, dt, peer, tag);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::send(std::vector<at::Tensor> &tensors, int dst, int tag) {
  return point_to_point(tensors, dst, tag, c10d::OpType::SEND);
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::recv(std::vector<at::Tensor> &tensors, int src, int tag) {
  return point_to_point(tensors, src, tag, c10d::OpType::RECV);
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::recvAnysource(std::vector<at::Tensor> &tensors, int tag) {
  return point_to_point(tensors, PG_ANY_SOURCE, tag, c10d::OpType::RECVANYSOURCE);
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::barrier(const c10d::BarrierOptions &opts) {
  // A host-side barrier: on the CPU strategy, or on the GPU's for a backend
  // that serves only CUDA.
  const c10::Device device(comm_->serves_cpu() ? c10::DeviceType::CPU : c10::DeviceType::CUDA);
  Operation op = operation("barrier", c10d::OpType::BARRIER, device, opts.timeout);
  return launch(std::move(op), [](pg_strategy *s, pg_work **w) { return w ? pg_ibarrier(s, w) : pg_barrier(s); });
}

}  // namespace pgstrategy_torch
