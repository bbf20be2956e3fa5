#include "backends/fairring/shm_transport.h"

#include <cstring>
#include <new>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/runtime.h"
#include "util/copy.h"
#include "util/reduce.h"
#include "util/round_up.h"
#include "util/status.h"

namespace pg::fairring {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::int64_t kInSlot = -1;

// Messages from this size on are gathered with non-temporal stores: the
// receive buffer is written once and not read back by the gather, so streaming
// it to memory skips reading each line first (read-for-ownership) and leaves
// the cache to the slots (64 MiB out of place: 11.0 ms against 13.8,
// docs/performance.md). Below it the buffer likely stays in cache for the user.
// glibc's memcpy decides this from the reported cache size, which virtual
// machines often overstate.
constexpr std::size_t kStreamBytes = std::size_t(8) << 20;

}  // namespace

void ShmTransport::copy_out(char *to, const char *from, std::size_t bytes, Copy how) {
  switch (how) {
    case Copy::stream:
#if defined(__SSE2__)
    {
      // Stores of 16 aligned bytes; the unaligned head and tail are copied normally.
      const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(to) % 16) % 16;
      if (bytes >= head + 64) {
        std::memcpy(to, from, head);
        std::size_t i = head;
        for (; i + 64 <= bytes; i += 64)
          for (std::size_t v = 0; v < 64; v += 16)
            _mm_stream_si128(reinterpret_cast<__m128i *>(to + i + v),
                             _mm_loadu_si128(reinterpret_cast<const __m128i *>(from + i + v)));
        std::memcpy(to + i, from + i, bytes - i);
        _mm_sfence();  // the streamed stores are visible before the gathered counter
        return;
      }
    }
#endif
      break;
    case Copy::pages: return pull_pages(to, from, bytes);
    case Copy::plain: break;
  }
  std::memcpy(to, from, bytes);
}

pg_status ShmTransport::create(MPI_Comm node_comm, std::size_t slot_bytes, int slots, const Handoff &handoff,
                               const Memory *memory, std::unique_ptr<ShmTransport> *out) {
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "counters are shared between processes");
  std::unique_ptr<ShmTransport> t(new ShmTransport());
  t->slots_ = slots;
  t->slot_bytes_ = round_up(slot_bytes, 64);
  t->memory_ = memory;
  t->handoff_ = handoff;
  MPI_Comm_rank(node_comm, &t->local_);
  MPI_Comm_size(node_comm, &t->local_size_);
  const std::size_t w = static_cast<std::size_t>(slots);
  const std::size_t sources_at = sizeof(Counters);
  const std::size_t slots_at = round_up(sources_at + 2 * w * sizeof(Source), kPage);
  const std::size_t bytes = slots_at + 2 * w * t->slot_bytes_;

  NodeWindow window;
  PG_CHECK(allocate_node_window(node_comm, bytes, "the fairring backend's slots", &window));
  t->win_ = window.win;
  PG_CHECK(touch_node_window(node_comm, window, bytes));
  t->parts_.resize(static_cast<std::size_t>(t->local_size_));
  t->resolved_.resize(static_cast<std::size_t>(t->local_size_));
  for (int p = 0; p < t->local_size_; ++p) {
    char *at = window.parts[static_cast<std::size_t>(p)];
    Part &part = t->parts_[static_cast<std::size_t>(p)];
    part.counters = reinterpret_cast<Counters *>(at);
    part.inputs = reinterpret_cast<Source *>(at + sources_at);
    part.results = part.inputs + w;
    part.input_slots = at + slots_at;
    part.result_slots = part.input_slots + w * t->slot_bytes_;
  }
  char *base = window.base;
  new (base) Counters();  // this rank's own counters, before any peer reads them
  PG_MPI_CHECK(MPI_Barrier(node_comm));
  *out = std::move(t);
  return PG_OK;
}

ShmTransport::~ShmTransport() {
  if (win_ != MPI_WIN_NULL && runtime::mpi_alive()) MPI_Win_free(&win_);
}

bool ShmTransport::all_past(Counter Counters::*which, std::uint64_t tick, bool self) const {
  for (int p = 0; p < local_size_; ++p)
    if ((p != local_ || self) &&
        (parts_[static_cast<std::size_t>(p)].counters->*which).value.load(std::memory_order_acquire) <= tick)
      return false;
  return true;
}

char *ShmTransport::input_slot(int p, std::uint64_t tick) const {
  return parts_[static_cast<std::size_t>(p)].input_slots + (tick % slots_) * slot_bytes_;
}

char *ShmTransport::result_slot(int p, std::uint64_t tick) const {
  return parts_[static_cast<std::size_t>(p)].result_slots + (tick % slots_) * slot_bytes_;
}

const char *ShmTransport::locate(int p, const Source &source, const char *slot, std::size_t in_slot,
                                 std::size_t in_buffer, std::size_t esize) const {
  if (source.id == kInSlot) return slot + in_slot * esize;
  // The peer's part of a pg_mem_alloc buffer: found once, not per piece (Memory::address locks).
  Resolved &r = resolved_[static_cast<std::size_t>(p)];
  if (r.id != source.id) {
    r.base = memory_->address(SharedSpot{static_cast<int>(source.id), 0}, p);
    r.id = source.id;
  }
  return r.base + source.offset + in_buffer * esize;
}

bool ShmTransport::try_publish(const Plan &plan, std::size_t k) {
  const std::uint64_t tick = plan.first_tick + k;
  Part &me = parts_[static_cast<std::size_t>(local_)];
  if (plan.reduces()) {
    // The slot's previous slice must have been read by every peer.
    if (tick >= static_cast<std::uint64_t>(slots_) && !all_past(&Counters::reduced, tick - slots_, false))
      return false;
    Source &source = me.inputs[tick % slots_];
    if (plan.send_spot.id >= 0) {
      source = {plan.send_spot.id, plan.send_spot.offset};  // peers read the buffer itself
    } else {
      source = {kInSlot, 0};
      // Only what peers read: every shard but this rank's own.
      char *slot = input_slot(local_, tick);
      for (int q = 0; q < local_size_; ++q) {
        if (q == local_) continue;
        const std::size_t len = plan.piece_len(k, q), bytes = len * plan.esize;
        char *to = slot + plan.shard_offset(k, q) * plan.esize;
        for (std::size_t j = 0; j < plan.pieces(); ++j)
          std::memcpy(to + j * bytes, plan.send() + plan.piece_offset(k, q, j) * plan.esize, bytes);
      }
    }
  }
  me.counters->ready.value.store(tick + 1, std::memory_order_release);
  return true;
}

bool ShmTransport::try_reduce(const Plan &plan, std::size_t k, char **shard) {
  const std::uint64_t tick = plan.first_tick + k;
  if (plan.reduces() && !all_past(&Counters::ready, tick, false)) return false;
  // The slot's previous slice (and its description) must have been gathered by
  // every rank, this one included.
  if (tick >= static_cast<std::uint64_t>(slots_) && !all_past(&Counters::gathered, tick - slots_, true))
    return false;
  Part &me = parts_[static_cast<std::size_t>(local_)];
  char *home = reduce_home(plan, k);
  *shard = home ? home : result_slot(local_, tick);
  me.results[tick % slots_] =
      home && plan.recv_spot.id >= 0 ? Source{plan.recv_spot.id, plan.recv_spot.offset} : Source{kInSlot, 0};
  if (plan.reduces()) {
    const std::size_t len = plan.piece_len(k, local_), bytes = len * plan.esize;
    const std::size_t packed = plan.shard_offset(k, local_);
    for (std::size_t j = 0; j < plan.pieces() && len > 0; ++j) {
      char *out = *shard + j * bytes;
      const std::size_t at = plan.piece_offset(k, local_, j);
      const char *mine = plan.send() + at * plan.esize;
      // This rank's own contribution first, then the peers' in node order after
      // it (the transport exists only for G > 1).
      for (int i = 1; i < local_size_; ++i) {
        const int p = (local_ + i) % local_size_;
        const Source &source = parts_[static_cast<std::size_t>(p)].inputs[tick % slots_];
        const char *theirs = locate(p, source, input_slot(p, tick), packed + j * len, at, plan.esize);
        if (i == 1)
          reduce_into(plan.args.dtype, plan.combine_op(), out, mine, theirs, len);
        else
          reduce_local(plan.args.dtype, plan.combine_op(), out, theirs, len);
      }
    }
  }
  me.counters->reduced.value.store(tick + 1, std::memory_order_release);
  return true;
}

// Where this rank reduces its shard of slice k: where the plan has it
// (result_in_place), but in its slot a gathered shard bound for an ordinary
// receive buffer where the handoff reduces in the slot, or where the gather
// streams into that buffer past the cache (reduced there, the shard would be
// read back from memory into the slot: 16 MiB out of place up to 1.03 times
// slower).
char *ShmTransport::reduce_home(const Plan &plan, std::size_t k) const {
  if (plan.gathers() && plan.recv_spot.id < 0 && (!handoff_.reduce_in_buffer || copy_for(plan) == Copy::stream))
    return nullptr;
  return plan.result_in_place(k);
}

// Streamed out of place only: in place, the receive buffer is also the input,
// and its lines are in cache already (streaming measured slower there).
ShmTransport::Copy ShmTransport::copy_for(const Plan &plan) const {
  if (plan.gathered_bytes >= kStreamBytes && !plan.args.in_place) return Copy::stream;
  return plan.gathered_bytes <= handoff_.pages_up_to ? Copy::pages : Copy::plain;
}

void ShmTransport::copy_shard(const Plan &plan, std::size_t k, int p, Copy how) const {
  const std::uint64_t tick = plan.first_tick + k;
  const std::size_t len = plan.piece_len(k, p), bytes = len * plan.esize;
  const Source &source = parts_[static_cast<std::size_t>(p)].results[tick % slots_];
  for (std::size_t j = 0; j < plan.pieces() && len > 0; ++j) {
    const std::size_t at = plan.piece_offset(k, p, j);
    const char *from = locate(p, source, result_slot(p, tick), j * len, at, plan.esize);
    char *to = plan.recv() + at * plan.esize;
    if (to != from) copy_out(to, from, bytes, how);
  }
}

pg_status ShmTransport::finished(const Plan &plan, std::size_t k) {
  // This rank's own shard, while it is in cache: reduced in a slot, into its
  // receive buffer (from its own cache: by pages gains nothing); reduced in
  // an ordinary receive buffer, into its slot for the peers.
  if (plan.gathers()) {
    const char *home = reduce_home(plan, k);
    const Copy how = copy_for(plan);
    if (home && plan.recv_spot.id < 0)
      std::memcpy(result_slot(local_, plan.first_tick + k), home, plan.shard_len(k, local_) * plan.esize);
    else
      copy_shard(plan, k, local_, how == Copy::pages ? Copy::plain : how);
  }
  parts_[static_cast<std::size_t>(local_)].counters->done.value.store(plan.first_tick + k + 1,
                                                                       std::memory_order_release);
  return PG_OK;
}

bool ShmTransport::try_gather(const Plan &plan, std::size_t k) {
  const std::uint64_t tick = plan.first_tick + k;
  if (plan.gathers()) {
    if (!all_past(&Counters::done, tick, false)) return false;
    const Copy how = copy_for(plan);
    for (int p = 0; p < local_size_; ++p)
      if (p != local_) copy_shard(plan, k, p, how);
  }
  parts_[static_cast<std::size_t>(local_)].counters->gathered.value.store(tick + 1, std::memory_order_release);
  return true;
}

bool ShmTransport::peers_done_with(const Plan &plan) const {
  const std::uint64_t last = plan.first_tick + plan.slices - 1;
  if (plan.send_spot.id >= 0 && plan.reduces() && !all_past(&Counters::reduced, last, false)) return false;
  // Peers read a rank's receive buffer only where its part was reduced into it.
  if (plan.recv_spot.id >= 0 && plan.reduces() && plan.gathers() && !all_past(&Counters::gathered, last, false))
    return false;
  return true;
}

pg_status ShmTransport::publish(const Plan &plan, std::size_t k, bool *done) {
  *done = try_publish(plan, k);
  return PG_OK;
}

pg_status ShmTransport::reduce(const Plan &plan, std::size_t k, char **shard, bool *done) {
  *done = try_reduce(plan, k, shard);
  return PG_OK;
}

pg_status ShmTransport::gather(const Plan &plan, std::size_t k, bool *done) {
  *done = try_gather(plan, k);
  return PG_OK;
}

pg_status ShmTransport::released(const Plan &plan, bool *done) {
  *done = peers_done_with(plan);
  return PG_OK;
}

void ShmTransport::fail() {
  parts_[static_cast<std::size_t>(local_)].counters->failed.value.store(1, std::memory_order_release);
}

bool ShmTransport::failed() const {
  for (const Part &part : parts_)
    if (part.counters->failed.value.load(std::memory_order_acquire) != 0) return true;
  return false;
}

}  // namespace pg::fairring
