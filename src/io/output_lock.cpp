#include "tessera/io/output_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tessera/core/error.hpp"

namespace tessera::io {

std::string output_lock_file(const std::string& directory) {
  return (std::filesystem::path(directory) / "tessera.lock").string();
}

std::optional<OutputLock> OutputLock::try_acquire(const std::string& directory,
                                                  const std::string& holder) {
  const std::string path = output_lock_file(directory);
  const int descriptor = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  TESSERA_CHECK(descriptor >= 0,
                "cannot create the lock file '" << path << "': " << std::strerror(errno));
  struct flock whole_file {};
  whole_file.l_type = F_WRLCK;
  whole_file.l_whence = SEEK_SET;
  if (::fcntl(descriptor, F_SETLK, &whole_file) != 0) {
    const int error = errno;
    ::close(descriptor);
    if (error == EACCES || error == EAGAIN) return std::nullopt;
    TESSERA_FAIL("cannot lock '" << path << "': " << std::strerror(error)
                                 << " (the file system does not support locks; choose an "
                                    "output.directory on one that does)");
  }
  OutputLock lock(descriptor);
  const std::string line = holder + "\n";
  const bool written =
      ::ftruncate(descriptor, 0) == 0 &&
      ::pwrite(descriptor, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size());
  TESSERA_CHECK(written, "cannot write the lock file '" << path << "': " << std::strerror(errno));
  return lock;
}

std::string OutputLock::holder(const std::string& directory) {
  std::ifstream in(output_lock_file(directory));
  std::string line;
  std::getline(in, line);
  return line;
}

OutputLock::OutputLock(OutputLock&& other) noexcept : descriptor_(other.descriptor_) {
  other.descriptor_ = -1;
}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    if (descriptor_ >= 0) ::close(descriptor_);
    descriptor_ = other.descriptor_;
    other.descriptor_ = -1;
  }
  return *this;
}

OutputLock::~OutputLock() {
  if (descriptor_ >= 0) ::close(descriptor_);  // closing releases the fcntl lock
}

}  // namespace tessera::io
