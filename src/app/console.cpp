#include "tessera/app/console.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <iostream>

#include "tessera/core/error.hpp"
#include "tessera/io/write_error.hpp"

namespace tessera::app {
namespace {

/// A stream whose buffer is null: every write fails silently and costs nearly nothing.
std::ostream& discard() {
  static std::ostream null_stream(nullptr);
  return null_stream;
}

/// Appends `text` to the log and flushes it; throws io::WriteError naming the log and the cause
/// when it does not get there (a full disk): a run whose log is lost ends, like one whose
/// history is.
void append_to_log(std::FILE* log, const std::string& path, const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), log) == text.size() && std::fflush(log) == 0) return;
  const int error = errno;
  std::clearerr(log);
  throw io::WriteError("cannot write '" + path + "': " + std::strerror(error));
}

/// Writes to standard output and to a log file; the file gets whole lines (one fwrite each).
/// A line that cannot be written throws out of the stream that wrote it (its exceptions()
/// include badbit).
class TeeBuffer : public std::streambuf {
 public:
  TeeBuffer(std::streambuf* screen, std::FILE* file, std::string path)
      : screen_(screen), file_(file), path_(std::move(path)) {}
  ~TeeBuffer() override {
    try {
      flush_line();
    } catch (const io::WriteError&) {
      // Already on the way out; the line is on standard output.
    }
  }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    screen_->sputc(static_cast<char>(c));
    line_.push_back(static_cast<char>(c));
    if (c == '\n') flush_line();
    return c;
  }
  std::streamsize xsputn(const char* text, std::streamsize count) override {
    for (std::streamsize i = 0; i < count; ++i) overflow(text[i]);
    return count;
  }
  int sync() override {
    flush_line();
    return screen_->pubsync();
  }

 private:
  void flush_line() {
    if (line_.empty()) return;
    const std::string line = std::move(line_);
    line_.clear();
    append_to_log(file_, path_, line);
  }
  std::streambuf* screen_;
  std::FILE* file_;
  std::string path_;
  std::string line_;
};

}  // namespace

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

Console::Console(bool root) : root_(root), out_(root ? &std::cout : &discard()) {}

Console::~Console() {
  try {
    if (tee_stream_) tee_stream_->flush();
  } catch (const std::exception&) {
    // A destructor cannot report it; the line is on standard output.
  }
  tee_stream_.reset();
  tee_.reset();
  if (log_) std::fclose(log_);
}

void Console::log_to(const std::string& path) {
  log_ = std::fopen(path.c_str(), "a");
  TESSERA_CHECK(log_, path << ": cannot open the log for appending; check the output folder's "
                              "permissions");
  log_path_ = path;
  if (!root_) return;
  append_to_log(log_, path, "=== " + utc_now() + " tessera run ===\n");
  tee_ = std::make_unique<TeeBuffer>(std::cout.rdbuf(), log_, path);
  tee_stream_ = std::make_unique<std::ostream>(tee_.get());
  tee_stream_->exceptions(std::ios::badbit);
  out_ = tee_stream_.get();
}

void Console::log_error(int rank, const std::string& text) const {
  if (!log_) return;
  try {
    append_to_log(
        log_, log_path_,
        utc_now() + " tessera: error on rank " + std::to_string(rank) + ": " + text + "\n");
  } catch (const io::WriteError&) {
    // The error being reported matters more than its copy in the log.
  }
}

void Console::warning(const std::string& text) const {
  std::cerr << "tessera: warning: " << text << std::endl;
  if (!log_) return;
  append_to_log(log_, log_path_, utc_now() + " tessera: warning: " + text + "\n");
}

}  // namespace tessera::app
