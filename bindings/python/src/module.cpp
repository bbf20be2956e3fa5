// pgstrategy_torch._C: the backend class and the library's queries.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/python.h>

#include <mpi.h>
#include <pg_strategy.h>

#include "process_group.h"

namespace py = pybind11;
using pgstrategy_torch::ProcessGroup;

namespace {

// This rank's place in the MPI job and `text` as rank 0 gave it: what
// torch's env:// rendezvous needs, found over a strategy of the library (so
// MPI stays the library's, or the application's, as pg_strategy.h says).
// `text` may be a callable instead, called on rank 0 alone once the job is up
// (mpi_env opens its store there); should it raise, every rank raises.
py::tuple mpi_job(const py::object &text) {
  constexpr std::size_t kLength = 256;
  std::vector<char> shared(kLength, '\0');
  const bool callable = PyCallable_Check(text.ptr());
  if (!callable) text.cast<std::string>().copy(shared.data(), kLength - 1);
  int rank = 0, size = 0, local_rank = 0, local_size = 0;
  std::string error, root_error;
  {
    // Collective: other Python threads run while this rank waits for the others.
    py::gil_scoped_release nogil;
    pg_strategy *s = nullptr;
    pg_status st = pg_strategy_create("cpu", "mpi", &s);
    if (st == PG_OK) {
      rank = pg_strategy_rank(s);
      size = pg_strategy_size(s);
      local_rank = pg_strategy_local_rank(s);
      local_size = pg_strategy_local_size(s);
      if (callable && rank == 0) {
        py::gil_scoped_acquire gil;
        try {
          text().cast<std::string>().copy(shared.data(), kLength - 2);
          shared[kLength - 1] = 1;  // the text came (the last byte: whether it did)
        } catch (const std::exception &e) {
          root_error = e.what();
        }
      }
      st = pg_broadcast(s, shared.data(), kLength, PG_UINT8, 0);
    }
    if (st != PG_OK) error = std::string(pg_status_name(st)) + ": " + pg_last_error();
    pg_strategy_destroy(s);
  }
  if (!error.empty()) throw std::runtime_error("pgstrategy: " + error);
  if (!root_error.empty()) throw std::runtime_error(root_error);
  if (callable && shared[kLength - 1] != 1)
    throw std::runtime_error("pgstrategy: rank 0 could not give the job's rendezvous (its own error says why)");
  shared[kLength - 1] = '\0';
  return py::make_tuple(rank, size, local_rank, local_size, std::string(shared.data()));
}

// The library's bootstrap (include/pg_strategy.h, "Starting without an MPI
// launcher"), for _create: a status other than PG_OK raises its message.
void check_launch(pg_status st, const char *what) {
  if (st != PG_OK) throw std::runtime_error(std::string("pgstrategy ") + what + ": " + pg_status_name(st) + ": " +
                                            pg_last_error());
}

std::string mpi_launcher() {
  char name[64] = "";
  check_launch(pg_mpi_launcher(name, sizeof name), "launcher");
  return name;
}

// (initialized, size of MPI_COMM_WORLD or 0, finalized)
py::tuple mpi_world() {
  int initialized = 0, finalized = 0, size = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_size(MPI_COMM_WORLD, &size);
  return py::make_tuple(bool(initialized), size, bool(finalized));
}

// The end of a process that multiprocessing forked (it leaves through
// os._exit, past the exit handler in which the library finalizes the MPI it
// brought up): the groups' strategies go, then MPI_Finalize, as at any exit.
// Without it a peer still running would see this rank die and end the job.
void finish_forked() {
  pgstrategy_torch::shutdown_all();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

std::string bootstrap_listen(int size, const std::string &secret) {
  char address[512] = "";
  pg_status st;
  {
    py::gil_scoped_release nogil;
    st = pg_bootstrap_listen(size, nullptr, secret.c_str(), address, sizeof address);
  }
  check_launch(st, "bootstrap");
  return address;
}

void bootstrap_join(int rank, int size, const std::string &address, const std::string &secret) {
  pg_status st;
  {
    // Collective: the other ranks arrive while this one waits.
    py::gil_scoped_release nogil;
    st = pg_bootstrap_join(rank, size, address.c_str(), secret.c_str());
  }
  check_launch(st, "bootstrap");
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  // c10d::Backend's Python type, the base of ours, comes from torch.
  py::module_::import("torch.distributed");

  py::class_<ProcessGroup, c10d::Backend, c10::intrusive_ptr<ProcessGroup>>(m, "ProcessGroup")
      .def(py::init<int, int, const std::vector<int64_t> &, std::string, std::chrono::milliseconds>(),
           py::arg("rank"), py::arg("size"), py::arg("global_ranks"), py::arg("backend"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def("describe", &ProcessGroup::describe, py::arg("device") = "cpu",
           "pg_strategy_describe of the group's strategy for the device: backend and why, layout",
           py::call_guard<py::gil_scoped_release>())
      .def("error", &ProcessGroup::error,
           "The message of the group's first failed operation, or of its abort; '' when none")
      // torch asks the ranks outside a new subgroup to take part in the
      // parent's split; subgroups are made over their members only (split).
      .def("perform_nocolor_split", [](ProcessGroup &, const py::object &) {}, py::arg("device"),
           "Nothing: a subgroup is made by its members alone");

  m.def("shutdown", &pgstrategy_torch::shutdown_all,
        "Stops the completion thread and destroys every group's strategies (interpreter exit)",
        py::call_guard<py::gil_scoped_release>());
  m.def("finish_forked", &finish_forked,
        "At the end of a process multiprocessing forked, whose bootstrap brought MPI up: shutdown, then "
        "MPI_Finalize", py::call_guard<py::gil_scoped_release>());
  m.def("mpi_job", &mpi_job, py::arg("text"),
        "(rank, size, local_rank, local_size, rank 0's text) of the MPI job (collective); text: a str, or "
        "a callable that rank 0 alone calls for it");
  m.def("mpi_launcher", &mpi_launcher, "pg_mpi_launcher: the MPI launcher of this process, or ''");
  m.def("mpi_world", &mpi_world, "(initialized, MPI_COMM_WORLD's size, finalized)");
  m.def("bootstrap_listen", &bootstrap_listen, py::arg("size"), py::arg("secret"),
        "pg_bootstrap_listen (rank 0): opens the job's rendezvous; returns host:port");
  m.def("bootstrap_join", &bootstrap_join, py::arg("rank"), py::arg("size"), py::arg("address"),
        py::arg("secret"), "pg_bootstrap_join: joins the job and brings MPI up (collective)");
  m.def("backends", [] {
    char names[4096] = "";
    pg_backends_list(names, sizeof names);
    return std::string(names);
  }, "The registered pgstrategy backends (plugins appear once loaded)");
  m.def("default_backend", [](const std::string &device) {
    const char *name = pg_default_backend(device.c_str());
    if (!name) throw py::value_error(pg_last_error());
    return std::string(name);
  }, py::arg("device"));
  m.def("dump_trace", [] {
    const pg_status st = pg_trace_dump();
    if (st != PG_OK) throw std::runtime_error(std::string("pgstrategy: ") + pg_last_error());
  }, "pg_trace_dump: this rank's flight-recorder dump, now (PGS_TRACE)");
  m.def("mpi_library", [] {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int length = 0;
    MPI_Get_library_version(text, &length);
    return std::string(text, static_cast<std::size_t>(length > 0 ? length : 0));
  }, "MPI_Get_library_version: the MPI library this process runs with");
  m.def("version", [] {
    int major = 0, minor = 0, patch = 0;
    pg_version(&major, &minor, &patch);
    return py::make_tuple(major, minor, patch);
  }, "The version of the pgstrategy library that is running");
}
