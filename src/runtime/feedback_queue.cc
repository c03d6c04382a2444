#include "runtime/feedback_queue.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace weir::runtime {
namespace {

void put_varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

int64_t count_framed(std::string_view chunk) {
  int64_t n = 0;
  size_t at = 0;
  while (at < chunk.size()) {
    uint64_t len = 0;
    int shift = 0;
    while (at < chunk.size()) {
      const auto b = static_cast<uint8_t>(chunk[at++]);
      len |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if ((b & 0x80) == 0) break;
    }
    at += len;
    ++n;
  }
  return n;
}

}  // namespace

FeedbackQueue::~FeedbackQueue() { clear(); }

void FeedbackQueue::clear() {
  memory_.clear();
  memory_held_ = 0;
  records_ = 0;
  spilled_records_.clear();
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
    std::error_code ec;
    std::filesystem::remove(spill_path_, ec);
    // Its directory too, when nothing else is in it.
    std::filesystem::remove(std::filesystem::path(spill_path_).parent_path(), ec);
  }
  file_end_ = read_at_ = 0;
}

absl::Status FeedbackQueue::push(std::string_view record) {
  if (memory_.empty() || memory_.back().size() >= kChunkBytes) {
    if (memory_held_ >= memory_bytes_ && !memory_.empty()) {
      // Over budget: the full chunks go to the spill file, the newest stays.
      std::string last = std::move(memory_.back());
      memory_.pop_back();
      while (!memory_.empty()) {
        std::string chunk = std::move(memory_.front());
        memory_.pop_front();
        if (absl::Status s = spill(std::move(chunk)); !s.ok()) return s;
      }
      memory_held_ = last.size();
      memory_.push_back(std::move(last));
    }
    memory_.emplace_back();
    memory_.back().reserve(kChunkBytes + 16);
  }
  std::string& chunk = memory_.back();
  const size_t before = chunk.size();
  put_varint(&chunk, record.size());
  chunk.append(record);
  memory_held_ += chunk.size() - before;
  ++records_;
  return absl::OkStatus();
}

absl::Status FeedbackQueue::spill(std::string chunk) {
  if (file_ == nullptr) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(spill_path_).parent_path(), ec);
    file_ = std::fopen(spill_path_.c_str(), "w+b");
    if (file_ == nullptr) {
      return absl::InternalError("iteration feedback spill file " + spill_path_ + ": " + std::strerror(errno));
    }
  }
  const auto n = static_cast<uint32_t>(chunk.size());
  if (std::fseek(file_, file_end_, SEEK_SET) != 0 || std::fwrite(&n, 4, 1, file_) != 1 ||
      std::fwrite(chunk.data(), 1, chunk.size(), file_) != chunk.size()) {
    return absl::InternalError("iteration feedback spill file " + spill_path_ + ": write failed: " +
                               std::strerror(errno));
  }
  file_end_ += 4 + static_cast<int64_t>(chunk.size());
  spilled_total_ += static_cast<int64_t>(chunk.size());
  spilled_records_.push_back(count_framed(chunk));
  memory_held_ -= chunk.size();
  return absl::OkStatus();
}

absl::Status FeedbackQueue::pop_chunk(std::string* chunk) {
  chunk->clear();
  if (records_ == 0) return absl::OkStatus();
  if (file_ != nullptr && read_at_ < file_end_) {
    uint32_t n = 0;
    if (std::fseek(file_, read_at_, SEEK_SET) != 0 || std::fread(&n, 4, 1, file_) != 1) {
      return absl::DataLossError("iteration feedback spill file " + spill_path_ + ": short read");
    }
    chunk->resize(n);
    if (std::fread(chunk->data(), 1, n, file_) != n) {
      return absl::DataLossError("iteration feedback spill file " + spill_path_ + ": short read");
    }
    read_at_ += 4 + n;
    records_ -= spilled_records_.front();
    spilled_records_.pop_front();
    if (read_at_ == file_end_) {
      // Drained: the file starts over.
      read_at_ = file_end_ = 0;
    }
    return absl::OkStatus();
  }
  *chunk = std::move(memory_.front());
  memory_.pop_front();
  memory_held_ -= chunk->size();
  records_ -= count_framed(*chunk);
  return absl::OkStatus();
}

absl::Status FeedbackQueue::contents(std::string* out) const {
  out->clear();
  if (file_ != nullptr && read_at_ < file_end_) {
    int64_t at = read_at_;
    while (at < file_end_) {
      uint32_t n = 0;
      if (std::fseek(file_, at, SEEK_SET) != 0 || std::fread(&n, 4, 1, file_) != 1) {
        return absl::DataLossError("iteration feedback spill file " + spill_path_ + ": short read");
      }
      const size_t before = out->size();
      out->resize(before + n);
      if (std::fread(out->data() + before, 1, n, file_) != n) {
        return absl::DataLossError("iteration feedback spill file " + spill_path_ + ": short read");
      }
      at += 4 + n;
    }
  }
  for (const std::string& c : memory_) out->append(c);
  return absl::OkStatus();
}

}  // namespace weir::runtime
