#pragma once
/// What a person sees of a run: rank 0's messages on standard output (the other ranks'
/// are dropped, so no command prints N copies), and warnings from any rank on standard error.
/// A run also keeps both in `tessera.log` in its output folder.
#include <cstdio>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

namespace tessera::app {

/// The current UTC time as "2026-12-03T14:53:19Z".
std::string utc_now();

class Console {
 public:
  explicit Console(bool root);
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  /// Standard output on rank 0, a stream that discards everything elsewhere.
  std::ostream& out() { return *out_; }
  bool root() const { return root_; }
  /// "tessera: warning: <text>" on standard error, from whichever rank calls it (and, with a
  /// log, in the log with the time). Throws io::WriteError when the log cannot be written, as
  /// out() does then.
  void warning(const std::string& text) const;
  /// Appends "<time> tessera: error on rank <rank>: <text>" to the log, when one is open: the
  /// line the job ends with on standard error, so that the log says why the run ended. Only the
  /// log: the caller's handler prints the line. Never throws (a full disk loses the line).
  void log_error(int rank, const std::string& text) const;
  /// From now on, also appends what out() shows (rank 0) and every warning (any rank, one
  /// line per write, so ranks do not cut into each other's lines) to the file at `path`.
  /// Starts with a line naming the time. Throws naming the file when it cannot be opened.
  void log_to(const std::string& path);

 private:
  bool root_;
  std::ostream* out_;
  std::FILE* log_ = nullptr;
  std::string log_path_;
  std::unique_ptr<std::streambuf> tee_;  ///< standard output + the log (rank 0)
  std::unique_ptr<std::ostream> tee_stream_;
};

}  // namespace tessera::app
