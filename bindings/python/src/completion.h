// The completion thread: completes the futures of started works that nobody
// waits for (DDP waits on futures, not on works), fails those futures at the
// operation's timeout, and finishes the works dropped before they finished
// (their tensors stay alive until then). One per process, started on first
// need. It tests without blocking (a group whose mutex is held is skipped
// that round) and backs off while nothing finishes: MPI moves a nonblocking
// operation only while someone tests or waits for it.
#pragma once

#include <pg_strategy.h>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace pgstrategy_torch {

class Comm;
class Work;

// A work dropped before it finished: the library may still read and write
// `keep` (its tensors and staging buffers) until `pending` finishes; then
// `finish` runs (copies out of staging buffers), as for a work waited for.
struct Leftover {
  std::shared_ptr<Comm> comm;
  pg_work *pending;
  std::vector<at::Tensor> keep;
  std::vector<std::function<void()>> finish;
};

// Watch `work` until it has finished and its future is set, or its timeout
// has passed (its future then fails).
void complete_later(c10::intrusive_ptr<Work> work);

// Finish `leftover` and then free it.
void finish_later(Leftover leftover);

// Tensors the library may still use after a failure (MPI cannot cancel a
// collective: a late peer may still write into them): kept until the process exits.
void keep_until_exit(std::vector<at::Tensor> tensors);

// Stops the thread (interpreter exit). Works still unfinished are abandoned:
// their tensors are never released, since no thread may touch Python objects
// once the interpreter is gone.
void stop_completion();

}  // namespace pgstrategy_torch
