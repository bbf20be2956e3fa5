#include "core/poll.h"

#include <sched.h>

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

// Spins before the first yield: a peer's reply often comes within this.
constexpr int kSpins = 100;

}  // namespace

void Backoff::idle() {
  if (++idle_ < kSpins) cpu_relax();
  else sched_yield();
}

void check_watchdog(const Until &until) {
  if (!until.watched) return;
  const watchdog::Watch w = until.watch();
  if (watchdog::overdue(until.watched, w)) watchdog::abort_job(until.watched, w);
}

}  // namespace pg
