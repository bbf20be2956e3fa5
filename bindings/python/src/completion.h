// The completion thread: completes the futures of started works that nobody
// waits for (DDP waits on futures, not on works). One per process, started on
// first need. It tests its works in turn and yields between rounds: MPI moves
// a nonblocking operation only while someone tests or waits for it.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

namespace pgstrategy_torch {

class Work;

// Watch `work` until it has finished and its future is set.
void complete_later(c10::intrusive_ptr<Work> work);

// Stops the thread (interpreter exit). Works still unfinished are abandoned:
// their tensors are never released, since no thread may touch Python objects
// once the interpreter is gone.
void stop_completion();

}  // namespace pgstrategy_torch
