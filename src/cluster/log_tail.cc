#include "cluster/log_tail.h"

#include <algorithm>
#include <charconv>

namespace weir::cluster {
namespace {

std::mutex g_process_mu;
std::shared_ptr<LogTail> g_process;

}  // namespace

void LogTail::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t formatted;
  formatter_->format(msg, formatted);
  std::string line(formatted.data(), formatted.size());
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  bytes_ += line.size();
  lines_.push_back(std::move(line));
  while (bytes_ > max_bytes_ && lines_.size() > 1) {
    bytes_ -= lines_.front().size();
    lines_.pop_front();
    ++first_;
  }
}

LogTail::Piece LogTail::read(int64_t from, int length) {
  std::lock_guard<std::mutex> lock(mutex_);
  Piece p;
  p.first = first_;
  p.next = first_ + static_cast<int64_t>(lines_.size());
  if (from < 0) from = std::max(first_, p.next + from);
  from = std::max(from, first_);
  for (int64_t n = from; n < p.next && static_cast<int>(p.lines.size()) < length; ++n) {
    p.lines.push_back(lines_[static_cast<size_t>(n - first_)]);
  }
  return p;
}

std::shared_ptr<LogTail> LogTail::process() {
  std::lock_guard<std::mutex> lock(g_process_mu);
  return g_process;
}

void LogTail::set_process(std::shared_ptr<LogTail> tail) {
  std::lock_guard<std::mutex> lock(g_process_mu);
  g_process = std::move(tail);
}

absl::StatusOr<int64_t> whole_number_param(const std::string& text, const char* what, int64_t fallback) {
  if (text.empty()) return fallback;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return absl::InvalidArgumentError(std::string(what) + " '" + text + "' is not a whole number");
  }
  return v;
}

absl::StatusOr<nlohmann::json> log_piece_json(const std::string& offset, const std::string& length) {
  auto from = whole_number_param(offset, "offset", -200);
  if (!from.ok()) return from.status();
  auto n = whole_number_param(length, "length", 200);
  if (!n.ok()) return n.status();
  if (*n < 1 || *n > kMaxLogLines) {
    return absl::InvalidArgumentError("length " + length + " is not between 1 and " + std::to_string(kMaxLogLines));
  }
  std::shared_ptr<LogTail> tail = LogTail::process();
  if (tail == nullptr) return nlohmann::json{{"first", 0}, {"next", 0}, {"lines", nlohmann::json::array()}};
  LogTail::Piece p = tail->read(*from, static_cast<int>(*n));
  return nlohmann::json{{"first", p.first}, {"next", p.next}, {"lines", p.lines}};
}

}  // namespace weir::cluster
