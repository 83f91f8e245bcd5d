#pragma once
/// history.jsonl and run.json (docs/output-format.md). Written by rank 0 only.
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::io {

/// Writes `document` to `path` through a temporary name and a rename, so a crash never leaves
/// a half-written file under the final name.
void write_json_atomically(const std::string& path, const nlohmann::json& document);

/// history.jsonl: one JSON object per line. Each line is written with a single write and
/// flushed, so a reader (tail -f, a plotting script) always sees whole lines; the file is
/// truncated when the run starts.
class HistoryWriter {
 public:
  /// Starts a new history, or (`continue_after` >= 0, a restart) keeps the lines up to that
  /// iteration, the final line excepted, and appends after them.
  explicit HistoryWriter(const std::string& path, int64_t continue_after = -1);
  void append(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream stream_;
};

}  // namespace tessera::io
