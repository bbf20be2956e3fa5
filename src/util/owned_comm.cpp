#include "util/owned_comm.h"

namespace pg {
namespace {

// Created on first use, once MPI runs; never freed (it outlives every mark).
int owned_keyval() {
  static const int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &k, nullptr);
    return k;
  }();
  return keyval;
}

// The attribute's value: any non-null pointer (MPI_COMM_DUP_FN copies it).
int mark;

}  // namespace

void mark_owned(MPI_Comm comm) {
  if (comm != MPI_COMM_NULL) MPI_Comm_set_attr(comm, owned_keyval(), &mark);
}

bool is_owned(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return false;
  void *value = nullptr;
  int found = 0;
  return MPI_Comm_get_attr(comm, owned_keyval(), &value, &found) == MPI_SUCCESS && found;
}

}  // namespace pg
