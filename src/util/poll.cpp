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

long long now_ns() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

// The rule, read by every wait: two words that change only at a create.
std::atomic<long long> g_spin_ns{static_cast<long long>(WaitRule{}.spin_us * 1000)};
std::atomic<long long> g_budget_ns{static_cast<long long>(WaitRule{}.budget_us * 1000)};

}  // namespace

void set_wait_rule(const WaitRule &rule) {
  g_spin_ns.store(static_cast<long long>(rule.spin_us * 1000), std::memory_order_relaxed);
  g_budget_ns.store(static_cast<long long>(rule.budget_us * 1000), std::memory_order_relaxed);
}

void Backoff::idle() {
  if (rounds_ == 0) yielding_ = g_spin_ns.load(std::memory_order_relaxed) == 0;
  // The clock is read once per 64 rounds (a few µs): the short waits, the
  // common ones, never read it.
  if (++rounds_ % 64 == 0) {
    const long long now = now_ns();
    if (since_ns_ == 0) since_ns_ = now;
    const long long waited = now - since_ns_;
    if (waited >= g_budget_ns.load(std::memory_order_relaxed)) {
      rounds_ = 63;  // past the budget, every round naps
      // A nap makes the core idle, which a yield does not: the scheduler may
      // then run a peer, or another process, here.
      const struct timespec nap = {0, 20000};
      nanosleep(&nap, nullptr);
      return;
    }
    yielding_ = waited >= g_spin_ns.load(std::memory_order_relaxed);
  }
  if (yielding_) sched_yield();
  else cpu_relax();
}

namespace {
thread_local const std::atomic<bool> *t_cancel = nullptr;
thread_local PeerWatch *t_peers = nullptr;
thread_local unsigned t_rounds = 0;
std::atomic<ProgressHook> g_progress{nullptr};
}  // namespace

void set_progress_hook(ProgressHook hook) { g_progress.store(hook); }

void Interruption::move_others() {
  if (const ProgressHook hook = g_progress.load(std::memory_order_relaxed)) hook();
}

CancelScope::CancelScope(const std::atomic<bool> *flag, PeerWatch *peers)
    : previous_flag_(t_cancel), previous_peers_(t_peers) {
  t_cancel = flag;
  t_peers = peers;
}

CancelScope::~CancelScope() {
  t_cancel = previous_flag_;
  t_peers = previous_peers_;
}

Interruption::Interruption() : flag_(t_cancel), peers_(t_peers), rounds_(t_rounds) {}

Interruption::~Interruption() { t_rounds = rounds_; }

pg_status aborted() { return fail(PG_ERR_ABORTED, "the call was aborted (pg_strategy_abort) while it waited"); }

}  // namespace pg
