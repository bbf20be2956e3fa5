// The program's buffers as the library's bytes (layer.h, Buffer).
#include <algorithm>
#include <climits>

#include "layer.h"

namespace pgs_mpi {

bool Buffer::set(Call &call, const void *buf, MPI_Datatype type) {
  if (call.library()) return false;
  call.bad_datatype();
  MPI_Count size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size_x(type, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent_x(type, &true_lb, &true_extent) != MPI_SUCCESS || size < 0)
    return false;
  const bool contiguous = size == extent && size == true_extent;
  comm_ = call.comm();
  type_ = type;
  buf_ = static_cast<char *>(const_cast<void *>(buf));
  const std::size_t n = elements_.size();
  counts_.resize(n);
  displs_.resize(n);
  total_ = 0;
  MPI_Aint lowest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (elements_[i] < 0 || (!contiguous && elements_[i] > INT_MAX && MPI_VERSION < 4)) return false;
    offsets_[i] = static_cast<MPI_Aint>(offsets_[i] * extent);
    counts_[i] = static_cast<std::size_t>(elements_[i] * size);
    lowest = i == 0 ? offsets_[i] : std::min(lowest, offsets_[i]);
    total_ += counts_[i];
  }
  if (contiguous) {
    // The runs as they lie: from the lowest one, each element's bytes at its
    // true lower bound.
    stage_.clear();
    data_ = buf_ + lowest + true_lb;
    for (std::size_t i = 0; i < n; ++i) displs_[i] = static_cast<std::size_t>(offsets_[i] - lowest);
  } else {
    // Packed one after the other.
    stage_.assign(std::max<std::size_t>(total_, 1), 0);
    data_ = stage_.data();
    std::size_t at = 0;
    for (std::size_t i = 0; i < n; ++i) displs_[i] = at, at += counts_[i];
  }
  return true;
}

void Buffer::pack() {
  for (std::size_t i = 0; i < elements_.size() && !stage_.empty(); ++i) {
#if MPI_VERSION >= 4
    MPI_Count position = static_cast<MPI_Count>(displs_[i]);
    PMPI_Pack_c(buf_ + offsets_[i], elements_[i], type_, stage_.data(), static_cast<MPI_Count>(stage_.size()),
                &position, comm_);
#else
    int position = static_cast<int>(displs_[i]);
    PMPI_Pack(buf_ + offsets_[i], static_cast<int>(elements_[i]), type_, stage_.data(), static_cast<int>(stage_.size()),
              &position, comm_);
#endif
  }
}

void Buffer::unpack() {
  for (std::size_t i = 0; i < elements_.size() && !stage_.empty(); ++i) {
#if MPI_VERSION >= 4
    MPI_Count position = static_cast<MPI_Count>(displs_[i]);
    PMPI_Unpack_c(stage_.data(), static_cast<MPI_Count>(stage_.size()), &position, buf_ + offsets_[i], elements_[i],
                  type_, comm_);
#else
    int position = static_cast<int>(displs_[i]);
    PMPI_Unpack(stage_.data(), static_cast<int>(stage_.size()), &position, buf_ + offsets_[i],
                static_cast<int>(elements_[i]), type_, comm_);
#endif
  }
}

}  // namespace pgs_mpi
