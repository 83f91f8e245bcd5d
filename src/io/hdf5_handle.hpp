#pragma once
/// Private to io: RAII ownership of HDF5 identifiers and a guard that keeps HDF5's own error
/// stack off stderr while Tessera reports the failure itself (with the file and dataset named).
#include <hdf5.h>

#include <string>
#include <utility>

namespace tessera::io::detail {

/// Owns one hid_t and closes it with the matching H5?close. Move-only.
class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Handle() = default;
  H5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Handle(H5Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), closer_(other.closer_) {}
  H5Handle& operator=(H5Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      closer_ = other.closer_;
    }
    return *this;
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  ~H5Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  /// Closes now and reports whether HDF5 accepted it (a file close flushes, so it can fail).
  bool close() {
    if (id_ < 0) return true;
    const herr_t status = closer_(id_);
    id_ = -1;
    return status >= 0;
  }
  void reset() { close(); }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

inline H5Handle file_handle(hid_t id) { return {id, H5Fclose}; }
inline H5Handle group_handle(hid_t id) { return {id, H5Gclose}; }
inline H5Handle dataset_handle(hid_t id) { return {id, H5Dclose}; }
inline H5Handle space_handle(hid_t id) { return {id, H5Sclose}; }
inline H5Handle type_handle(hid_t id) { return {id, H5Tclose}; }
inline H5Handle plist_handle(hid_t id) { return {id, H5Pclose}; }
inline H5Handle attribute_handle(hid_t id) { return {id, H5Aclose}; }

/// Silences HDF5's automatic error printing for its lifetime (restores the previous handler).
class QuietHdf5Errors {
 public:
  QuietHdf5Errors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5Errors(const QuietHdf5Errors&) = delete;
  QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// HDF5's own reason for the failure of the last call on this thread: the innermost entry of
/// its error stack (where the failure began, e.g. "MPI_File_write_at_all failed: Other I/O error
/// No space left on device (H5FD__mpio_write)"), on one line; "" when the stack is empty. Call it
/// before the next HDF5 call, which clears the stack. QuietHdf5Errors keeps the stack; it only
/// stops HDF5 printing it.
std::string hdf5_failure_reason();

/// True when `path` (absolute, e.g. "/grid/x") names an existing link, checking each level so
/// that a missing group is an answer, not an HDF5 error.
inline bool path_exists(hid_t file, const std::string& path) {
  std::string::size_type pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty() || prefix == "/") continue;
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return true;
}

}  // namespace tessera::io::detail
