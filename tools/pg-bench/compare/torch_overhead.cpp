// What the torch backend costs per call over the C API: an 8-byte float32
// allreduce through pgstrategy_torch's ProcessGroup (allreduce, then
// Work::wait, as torch.distributed.all_reduce makes them), against the same
// operation straight through the library on a strategy of the same backend:
// pg_iallreduce + pg_work_wait + pg_work_free (what the backend calls) and
// pg_allreduce. The three are interleaved per repetition; every timed call
// starts after an MPI_Barrier; a call's time is the slowest rank's; the
// printed time is the median over calls and repetitions.
//
//   mpiexec -n 2 pg-torch-overhead [calls per repetition (2000)] [repetitions (9)] [backend (mpi)]
#include <mpi.h>
#include <pg_strategy.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "process_group.h"

namespace {

// Per-call times (µs) of `call`, each the slowest rank's.
std::vector<double> timed(int calls, const std::function<void()> &call) {
  std::vector<double> us(calls);
  for (int i = 0; i < calls; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    call();
    us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  }
  MPI_Allreduce(MPI_IN_PLACE, us.data(), calls, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return us;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

void check(pg_status st) {
  if (st != PG_OK) {
    std::fprintf(stderr, "pg-torch-overhead: %s: %s\n", pg_status_name(st), pg_last_error());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

}  // namespace

int main(int argc, char **argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 9;
  const std::string backend = argc > 3 ? argv[3] : "mpi";
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    auto group = c10::make_intrusive<pgstrategy_torch::ProcessGroup>(rank, size, std::vector<int64_t>{}, backend,
                                                                      std::chrono::milliseconds(60000));
    pg_strategy *s = nullptr;
    check(pg_strategy_create("cpu", backend.c_str(), &s));
    at::Tensor tensor = at::ones({2});
    std::vector<at::Tensor> tensors{tensor};
    float *buf = tensor.data_ptr<float>();
    const c10d::AllreduceOptions opts;
    std::vector<double> torch_us, nonblocking_us, blocking_us;
    for (int r = 0; r < reps; ++r) {
      auto add = [](std::vector<double> &all, const std::vector<double> &some) {
        all.insert(all.end(), some.begin(), some.end());
      };
      add(torch_us, timed(calls, [&] { group->allreduce(tensors, opts)->wait(); }));
      add(nonblocking_us, timed(calls, [&] {
            pg_work *w = nullptr;
            check(pg_iallreduce(s, buf, buf, 2, PG_FLOAT32, PG_SUM, &w));
            check(pg_work_wait(w, -1));
            check(pg_work_free(w));
          }));
      add(blocking_us, timed(calls, [&] { check(pg_allreduce(s, buf, buf, 2, PG_FLOAT32, PG_SUM)); }));
    }
    if (rank == 0) {
      const double t = median(torch_us), n = median(nonblocking_us), b = median(blocking_us);
      std::printf("8-byte allreduce, backend %s, %d ranks, median of %d x %d calls (us per call)\n",
                  backend.c_str(), size, reps, calls);
      std::printf("  torch backend (allreduce + wait)        %8.2f\n", t);
      std::printf("  pg_iallreduce + pg_work_wait + free     %8.2f\n", n);
      std::printf("  pg_allreduce                            %8.2f\n", b);
      std::printf("  added by the torch backend: %.2f us over the nonblocking calls, %.2f us over pg_allreduce\n",
                  t - n, t - b);
    }
    check(pg_strategy_destroy(s));
    group->shutdown();
  }
  MPI_Finalize();
  return 0;
}
