// Blocking and persisted intermediate results: one file per subpartition
// (producer subtask x consumer subtask of a job edge), written by the
// producer while it runs and read by the consumer after the producer
// finished, as often as the consumer is restarted.
//
// A file is a sequence of frames `u8 kind | u8 flag | i64 checkpoint_id |
// i64 timestamp_ms | u32 length | length bytes`, little-endian, one per
// channel event. Consecutive data buffers are merged into one frame of at
// most kMaxFrameBytes: the record framing inside buffers (varint length |
// bytes) spans buffers anyway. The writer writes `<path>.inprogress` and
// renames it to `<path>` when end-of-data is written (persisted: after an
// fsync, and the rename synced too), so a file under its final name is
// always complete; a closed writer without end-of-data removes its file.
//
// Readers and writers are confined to one task thread.
#ifndef WEIR_NETWORK_RESULT_FILE_H_
#define WEIR_NETWORK_RESULT_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "network/channel.h"
#include "weir/config.h"

namespace weir::network {

// Where the result files of `job_id` with exchange `mode` live: persisted
// under the checkpoint directory, blocking under config.result_directory
// (or the system's temporary directory). Persisted results with an s3://
// checkpoint directory are written and read in this process's own working
// copy under config.result_directory, and kept in remote_result_directory.
std::string result_directory(const JobConfig& config, const std::string& job_id, ExchangeMode mode);
// The s3:// prefix that keeps the results of `job_id` with exchange `mode`,
// or "" unless they are persisted results with an s3:// checkpoint directory.
std::string remote_result_directory(const JobConfig& config, const std::string& job_id, ExchangeMode mode);
// Every local directory result_directory() may name for the job's results
// of `mode` in any process of this host (removed when the job ends).
std::string local_result_root(const JobConfig& config, const std::string& job_id, ExchangeMode mode);

// The file of one subpartition in a job's result directory.
std::string result_file_path(const std::string& directory, int job_edge, int producer, int consumer);

class ResultFileWriter final : public ChannelWriter {
 public:
  static constexpr size_t kMaxFrameBytes = 256 * 1024;

  // Creates the directory if needed; `durable`: fsync before publishing.
  // `published`, if given, runs once the file is complete under its name
  // (to copy it elsewhere); its error fails the writer as a write would.
  using Published = std::function<absl::Status(const std::string& path)>;
  static absl::StatusOr<std::shared_ptr<ResultFileWriter>> create(std::string path, bool durable,
                                                                  Published published = {});
  ~ResultFileWriter() override;

  // Never blocks. Throws std::runtime_error (naming the file) when a write
  // fails, e.g. on a full disk.
  bool push(ChannelEvent ev, std::atomic<int64_t>* waited_ns = nullptr,
            const std::atomic<bool>* abort = nullptr) override;
  // Without end-of-data written: the partial file is removed.
  void close() override;

  // Bytes written so far (frames included).
  int64_t bytes() const { return bytes_; }

 private:
  ResultFileWriter(std::string path, int fd, bool durable, Published published);
  void append_header(const ChannelEvent& ev, uint32_t length);
  void write_out();  // the staged frames
  void finish();     // end-of-data: write, sync, publish

  const std::string path_;
  int fd_;
  const bool durable_;
  const Published published_hook_;
  std::string staged_;
  size_t open_frame_ = std::string::npos;  // offset of the last frame when it is a data frame
  int64_t bytes_ = 0;
  bool published_ = false;
};

class ResultFileReader final : public ChannelReader {
 public:
  // Fails (NotFound naming the file) when the producer's result is missing.
  static absl::StatusOr<std::shared_ptr<ResultFileReader>> open(const std::string& path);
  ~ResultFileReader() override;

  // The next event; a data buffer stays valid until the next poll. Empty
  // after end-of-data. Throws std::runtime_error (naming the file) on a
  // read error or a truncated or corrupt file.
  std::optional<ChannelEvent> poll() override;
  void close() override;
  void set_consumer(Wakeup*) override {}  // never waits: the file is complete

 private:
  ResultFileReader(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  // Reads exactly n bytes; false at a clean end of file before the first.
  bool read_exactly(char* p, size_t n);

  const std::string path_;
  int fd_;
  bool ended_ = false;
  std::vector<char> data_;
};

// A result written by another process, which serves it into a local
// channel (DataPlane::request_result). A consumer must not wait forever for
// a result whose server is gone: the channel closing before end-of-data
// fails the read, naming the result.
class ServedResultReader final : public ChannelReader {
 public:
  // `what` names the result and its server in errors.
  ServedResultReader(std::shared_ptr<LocalChannel> channel, std::string what)
      : channel_(std::move(channel)), what_(std::move(what)) {}

  // Throws std::runtime_error when the channel closed before end-of-data.
  std::optional<ChannelEvent> poll() override;
  void close() override { channel_->close(); }
  void set_consumer(Wakeup* wakeup) override { channel_->set_consumer(wakeup); }

 private:
  const std::shared_ptr<LocalChannel> channel_;
  const std::string what_;
  bool ended_ = false;
};

}  // namespace weir::network

#endif  // WEIR_NETWORK_RESULT_FILE_H_
