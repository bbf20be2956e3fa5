#include "mpi/agree.h"

#include <array>
#include <memory>

#include "util/keep_alive.h"
#include "util/poll.h"
#include "util/status.h"

namespace pg {

pg_status allgather_strings(MPI_Comm comm, const std::string &mine, std::vector<std::string> *all) {
  int size = 0;
  PG_MPI_CHECK(MPI_Comm_size(comm, &size));
  struct Buffers {
    int len = 0;
    std::vector<int> lens, displs;
    std::string mine, joined;
  };
  auto b = std::make_shared<Buffers>();
  b->mine = mine;
  b->len = static_cast<int>(mine.size());
  b->lens.resize(size);
  b->displs.resize(size);
  MPI_Request request = MPI_REQUEST_NULL;
  PG_MPI_CHECK(MPI_Iallgather(&b->len, 1, MPI_INT, b->lens.data(), 1, MPI_INT, comm, &request));
  PG_CHECK(poll_request(&request, b));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    b->displs[r] = total;
    total += b->lens[r];
  }
  b->joined.assign(static_cast<std::size_t>(total), '\0');
  PG_MPI_CHECK(MPI_Iallgatherv(b->mine.data(), b->len, MPI_CHAR, &b->joined[0], b->lens.data(), b->displs.data(),
                               MPI_CHAR, comm, &request));
  PG_CHECK(poll_request(&request, b));
  all->clear();
  for (int r = 0; r < size; ++r) all->push_back(b->joined.substr(b->displs[r], b->lens[r]));
  return PG_OK;
}

namespace {

// The worst status of every rank.
pg_status worst_status(MPI_Comm comm, int mine, int *worst) {
  auto cells = std::make_shared<std::array<int, 2>>(std::array<int, 2>{mine, 0});
  MPI_Request request = MPI_REQUEST_NULL;
  PG_MPI_CHECK(MPI_Iallreduce(&(*cells)[0], &(*cells)[1], 1, MPI_INT, MPI_MAX, comm, &request));
  const pg_status st = poll_request(&request, cells);
  *worst = (*cells)[1];
  return st;
}

}  // namespace

pg_status poll_request(MPI_Request *request, std::shared_ptr<void> held) {
  bool done = false;
  const pg_status st = poll(
      [request](bool *d) {
        int finished = 0;
        PG_MPI_CHECK(MPI_Test(request, &finished, MPI_STATUS_IGNORE));
        *d = finished != 0;
        return PG_OK;
      },
      Until{}, &done);
  if (*request != MPI_REQUEST_NULL && held) keep_until_exit(std::move(held));
  return st;
}

pg_status agree(MPI_Comm comm, pg_status local, const std::string &local_message) {
  int mine = static_cast<int>(local), worst = 0;
  PG_CHECK(worst_status(comm, mine, &worst));
  if (worst == PG_OK) return PG_OK;

  int size = 0;
  PG_MPI_CHECK(MPI_Comm_size(comm, &size));
  auto gathered = std::make_shared<std::vector<int>>(size + 1);  // [size]: this rank's, sent
  std::vector<int> &statuses = *gathered;
  statuses[size] = mine;
  MPI_Request request = MPI_REQUEST_NULL;
  PG_MPI_CHECK(MPI_Iallgather(&statuses[size], 1, MPI_INT, statuses.data(), 1, MPI_INT, comm, &request));
  PG_CHECK(poll_request(&request, gathered));
  std::vector<std::string> messages;
  PG_CHECK(allgather_strings(comm, local == PG_OK ? std::string() : local_message, &messages));

  int first = -1, failed = 0;
  bool same = true;
  for (int r = 0; r < size; ++r) {
    if (statuses[r] == PG_OK) continue;
    ++failed;
    if (first < 0) first = r;
    else if (messages[r] != messages[first] || statuses[r] != statuses[first]) same = false;
  }
  std::string text;
  if (same && failed == size) {
    text = messages[first];  // the usual case: every rank made the same mistake
  } else if (same) {
    text = (failed == 1 ? "rank " : "ranks ");
    int listed = 0;
    for (int r = 0; r < size; ++r)
      if (statuses[r] != PG_OK) text += (listed++ ? "," : "") + std::to_string(r);
    text += " of " + std::to_string(size) + " failed: " + messages[first];
  } else {
    int listed = 0;
    for (int r = 0; r < size && listed < 8; ++r) {
      if (statuses[r] == PG_OK) continue;
      text += (listed++ ? "; " : "") + std::string("rank ") + std::to_string(r) + " failed: " +
              messages[r];
    }
    if (failed > listed) text += "; and " + std::to_string(failed - listed) + " more ranks";
  }
  return fail_message(static_cast<pg_status>(statuses[first]), text);
}

pg_status agree_same(MPI_Comm comm, const std::string &value, const char *what) {
  std::vector<std::string> all;
  PG_CHECK(allgather_strings(comm, value, &all));
  return compare_values(all, what);
}

pg_status compare_values(const std::vector<std::string> &all, const char *what) {
  bool same = true;
  for (const std::string &v : all) same = same && v == all[0];
  if (same) return PG_OK;
  std::string text = std::string("ranks disagree on ") + what + ":";
  for (std::size_t r = 0; r < all.size() && r < 16; ++r)
    text += (r ? "; rank " : " rank ") + std::to_string(r) + ": " + all[r];
  return fail_message(PG_ERR_MISMATCH, text);
}

}  // namespace pg
