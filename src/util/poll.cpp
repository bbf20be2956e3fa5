#include "util/poll.h"

#include "util/status.h"

#include <sched.h>
#include <time.h>

namespace pg {
namespace {

// A hint to the core that this thread is spinning.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins before the first yield: a peer's reply often comes within this. Then
// yields; past kYields the core is given away for a moment (a peer on the same
// core needs it: yielding alone hands it back at once when the scheduler
// prefers the waiter).
constexpr int kSpins = 100, kYields = 200;

}  // namespace

void Backoff::idle() {
  ++idle_;
  if (idle_ < kSpins) {
    cpu_relax();
  } else if (idle_ < kSpins + kYields) {
    sched_yield();
  } else {
    const struct timespec pause = {0, 20000};
    nanosleep(&pause, nullptr);
  }
}

namespace {
thread_local const std::atomic<bool> *t_cancel = nullptr;
}  // namespace

CancelScope::CancelScope(const std::atomic<bool> *flag) : previous_(t_cancel) { t_cancel = flag; }

CancelScope::~CancelScope() { t_cancel = previous_; }

bool cancelled() { return t_cancel && t_cancel->load(std::memory_order_relaxed); }

pg_status aborted() { return fail(PG_ERR_ABORTED, "the call was aborted (pg_strategy_abort) while it waited"); }

}  // namespace pg
