#include "tessera/app/console.hpp"

#include <ctime>
#include <iostream>

#include "tessera/core/error.hpp"

namespace tessera::app {
namespace {

/// A stream whose buffer is null: every write fails silently and costs nearly nothing.
std::ostream& discard() {
  static std::ostream null_stream(nullptr);
  return null_stream;
}

/// Writes to standard output and to a log file; the file gets whole lines (one fwrite each).
class TeeBuffer : public std::streambuf {
 public:
  TeeBuffer(std::streambuf* screen, std::FILE* file) : screen_(screen), file_(file) {}
  ~TeeBuffer() override { flush_line(); }

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
    std::fwrite(line_.data(), 1, line_.size(), file_);
    std::fflush(file_);
    line_.clear();
  }
  std::streambuf* screen_;
  std::FILE* file_;
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
  if (tee_stream_) tee_stream_->flush();
  tee_stream_.reset();
  tee_.reset();
  if (log_) std::fclose(log_);
}

void Console::log_to(const std::string& path) {
  log_ = std::fopen(path.c_str(), "a");
  TESSERA_CHECK(log_, path << ": cannot open the log for appending; check the output folder's "
                              "permissions");
  if (!root_) return;
  const std::string header = "=== " + utc_now() + " tessera run ===\n";
  std::fwrite(header.data(), 1, header.size(), log_);
  std::fflush(log_);
  tee_ = std::make_unique<TeeBuffer>(std::cout.rdbuf(), log_);
  tee_stream_ = std::make_unique<std::ostream>(tee_.get());
  out_ = tee_stream_.get();
}

void Console::warning(const std::string& text) const {
  std::cerr << "tessera: warning: " << text << std::endl;
  if (!log_) return;
  const std::string line = utc_now() + " tessera: warning: " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), log_);
  std::fflush(log_);
}

}  // namespace tessera::app
