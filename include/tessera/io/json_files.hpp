#pragma once
/// history.jsonl and run.json (docs/output-format.md). Written by rank 0 only.
#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::io {

/// Writes `document` to `path` through a temporary name and a rename, so a crash never leaves
/// a half-written file under the final name. Throws io::WriteError naming the file and the
/// cause.
void write_json_atomically(const std::string& path, const nlohmann::json& document);

/// Sets `bytes` of disk space aside for the next write_json_atomically(path): the blocks of its
/// temporary file, which stays empty until then. A record can so still be written once the disk
/// is full (a run that failed for lack of space). False when the room could not be claimed
/// (no space, or a file system without fallocate); the write then takes its chance.
bool reserve_json_room(const std::string& path, uint64_t bytes);

/// history.jsonl: one JSON object per line. Each line is written with a single write and
/// flushed, so a reader (tail -f, a plotting script) always sees whole lines; the file is
/// truncated when the run starts.
class HistoryWriter {
 public:
  /// Starts a new history, or (`continue_after` >= 0, a restart) keeps the lines up to that
  /// iteration, the final line excepted, and appends after them.
  explicit HistoryWriter(const std::string& path, int64_t continue_after = -1);
  /// Throws io::WriteError naming the file and the cause when the line cannot be written.
  void append(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream stream_;
};

}  // namespace tessera::io
