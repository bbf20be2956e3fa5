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
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size), displs(size);
  PG_MPI_CHECK(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[r] = total;
    total += lens[r];
  }
  std::string joined(static_cast<std::size_t>(total), '\0');
  PG_MPI_CHECK(MPI_Allgatherv(mine.data(), len, MPI_CHAR, &joined[0], lens.data(), displs.data(),
                              MPI_CHAR, comm));
  all->clear();
  for (int r = 0; r < size; ++r) all->push_back(joined.substr(displs[r], lens[r]));
  return PG_OK;
}

namespace {

// The worst status of every rank, polled: a peer that aborted or failed (the
// thread's CancelScope) ends the wait, and the cells MPI may still write are
// then kept. Once every rank has come this far, the rest of agree cannot hang.
pg_status worst_status(MPI_Comm comm, int mine, int *worst) {
  auto cells = std::make_shared<std::array<int, 2>>(std::array<int, 2>{mine, 0});
  MPI_Request request = MPI_REQUEST_NULL;
  PG_MPI_CHECK(MPI_Iallreduce(&(*cells)[0], &(*cells)[1], 1, MPI_INT, MPI_MAX, comm, &request));
  const pg_status st = poll_request(&request);
  if (request != MPI_REQUEST_NULL) keep_until_exit(cells);
  *worst = (*cells)[1];
  return st;
}

}  // namespace

pg_status poll_request(MPI_Request *request) {
  bool done = false;
  return poll(
      [request](bool *d) {
        int finished = 0;
        PG_MPI_CHECK(MPI_Test(request, &finished, MPI_STATUS_IGNORE));
        *d = finished != 0;
        return PG_OK;
      },
      Until{}, &done);
}

pg_status agree(MPI_Comm comm, pg_status local, const std::string &local_message) {
  int mine = static_cast<int>(local), worst = 0;
  PG_CHECK(worst_status(comm, mine, &worst));
  if (worst == PG_OK) return PG_OK;

  int size = 0;
  PG_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<int> statuses(size);
  PG_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, statuses.data(), 1, MPI_INT, comm));
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
