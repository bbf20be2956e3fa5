// One drawn operation as a library call on one strategy: its buffers, filled
// from the operation's seed, the image every buffer must have afterwards
// (computed here, from what every rank sent), the call itself, and the check.
#ifndef PG_RANDOM_CALLS_H
#define PG_RANDOM_CALLS_H

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pg_strategy.h"
#include "program.h"

namespace pgr {

// pg_mem_alloc memory of one strategy (--mem-alloc), cut into equal blocks
// that calls take for their buffers and give back when they end, so that the
// library's in-place reads of such buffers meet every operation.
class Pool {
 public:
  // Collective over the strategy, as pg_mem_alloc is; `blocks` of `block_bytes`.
  static pg_status create(pg_strategy *s, std::size_t block_bytes, std::size_t blocks, std::unique_ptr<Pool> *out);
  ~Pool();  // collective, as pg_mem_free is
  // A free block of at least `bytes`, or null (too large, or none free).
  unsigned char *take(std::size_t bytes);
  void give_back(unsigned char *block);

 private:
  pg_strategy *s_ = nullptr;
  void *memory_ = nullptr;
  std::size_t block_bytes_ = 0;
  std::mutex mutex_;  // blocks are taken and given back under it, whichever thread ends a call
  std::vector<unsigned char *> free_;
};

// The strategy a call runs on, this rank's place in it, and its pg_mem_alloc
// blocks (null: every buffer is the call's own).
struct Group {
  pg_strategy *s = nullptr;
  int size = 0, rank = 0;
  Pool *pool = nullptr;
};

class Call {
 public:
  Call(const Op &op, const Group &group);
  Call(const Call &) = delete;
  Call &operator=(const Call &) = delete;
  ~Call();  // gives its pool blocks back

  // Whether this rank takes part (point-to-point pairs leave some out).
  bool involved() const { return involved_; }
  // Blocking: runs the call. Nonblocking: starts it (works()).
  pg_status start();
  std::vector<pg_work *> &works() { return works_; }
  // An even collective on zero elements: it returns at once, a work of it
  // finished when started (docs/algorithms.md, "Dispatch").
  bool empty() const;
  // The status every rank must get when the call went as it should.
  pg_status expected_status() const;
  // Compares every buffer with its expected image; "" when all match, else
  // what differed first (buffer, element, expected, got) and how many did.
  std::string check() const;
  // Where `w` is this call's receive from PG_ANY_SOURCE, finished: "" when
  // pg_work_source names the peer, else what it said. The sender of a
  // receive of more than `chunk` elements (PGS_MPI_CHUNK_COUNT; 0: unset)
  // may be unknown: the mpi backend runs it on the progress thread, so that
  // its chunks all come from the first one's sender.
  std::string check_source(pg_work *w, std::size_t chunk) const;
  // The operation with the counts this group runs, the root, the peers.
  const std::string &what() const { return what_; }
  // The call's name and count as the flight recorder writes them
  // (docs/trace.md): "allreduce", count (or this rank's elements).
  const char *trace_name() const;
  std::size_t trace_count() const { return trace_count_; }

 private:
  // A buffer the library gets, with guard bytes on both sides (`size` bytes
  // at `mem`: a block of the group's pool, or `own`), and the image it must
  // have afterwards; `undefined` byte ranges (of the region) may hold
  // anything afterwards (in-place reduce_scatter's other blocks).
  struct Buffer {
    const char *name = "";
    std::size_t bytes = 0, size = 0;
    unsigned char *mem = nullptr;
    bool pooled = false;
    std::vector<unsigned char> own, want;
    std::vector<std::pair<std::size_t, std::size_t>> undefined;
    unsigned char *at(std::size_t byte) { return mem + kGuard + byte; }
    unsigned char *want_at(std::size_t byte) { return want.data() + kGuard + byte; }
  };
  static constexpr std::size_t kGuard = 64;

  // A buffer of `bytes` with its guards, from the group's pool for three in
  // four of them (drawn per call and buffer, so ranks mix both kinds).
  Buffer &buffer(const char *name, std::size_t bytes);
  void freeze();  // the images start as the buffers are now
  void prepare();
  void prepare_big();
  std::string check_big() const;
  pg_status invoke_blocking();
  pg_status invoke_nonblocking();
  int received_from() const { return op_.any_source ? PG_ANY_SOURCE : peer_; }

  // Values: element i that rank `from` sends to rank `to` (data movement),
  // and rank q's input to a reduction, written as the dtype.
  void message_buffers(int to, int from);
  void put_moved(unsigned char *p, int from, int to, std::size_t i) const;
  void put_input(unsigned char *p, int q, std::size_t i) const;
  // The reduction over the group's ranks of element i, written as the dtype.
  void put_reduced(unsigned char *p, std::size_t i) const;

  Op op_;
  Group g_;
  std::size_t es_;
  bool involved_ = true;
  int root_ = 0;
  std::size_t n_ = 0;  // the even collectives' count (per block), point-to-point's count
  int peer_ = -1, dest_ = -1, source_ = -1;
  bool sends_first_ = false;
  int tag_ = 0;
  std::vector<std::size_t> counts_, displs_, counts2_, displs2_;  // the arrays the call gets
  std::vector<Buffer> buffers_;
  const void *send_ = nullptr;
  void *recv_ = nullptr;
  std::vector<pg_work *> works_;
  pg_work *receive_ = nullptr;  // point-to-point's nonblocking receive
  std::string what_;
  std::size_t trace_count_ = 0;
};

}  // namespace pgr

#endif
