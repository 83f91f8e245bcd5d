#pragma once
/// The lock that keeps two runs out of one output folder: an fcntl write lock on
/// <output>/tessera.lock, held by rank 0 for the whole run. The operating system releases it
/// when the process ends in any way (exit, crash, kill -9, node loss on a file system that
/// supports locks), so a dead run never leaves a stale lock behind. The file itself stays and
/// holds a line naming the run that held the lock last.
#include <optional>
#include <string>

namespace tessera::io {

class OutputLock {
 public:
  /// Takes the lock of `directory` and writes `holder` (who holds it) into the file; nullopt
  /// when another process holds it. Throws when the file cannot be created.
  static std::optional<OutputLock> try_acquire(const std::string& directory,
                                               const std::string& holder);
  /// What the current or last holder wrote into the lock file ("" when nothing).
  static std::string holder(const std::string& directory);

  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

 private:
  explicit OutputLock(int descriptor) : descriptor_(descriptor) {}
  int descriptor_ = -1;
};

/// <directory>/tessera.lock.
std::string output_lock_file(const std::string& directory);

}  // namespace tessera::io
