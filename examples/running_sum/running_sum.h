// The running-sum job: per key, the running sum and count of the values
// read, one output line `key,sum,count` per input record `key,value`.
// Malformed lines go, with their line number and the reason, to a rejects
// output in the same directory; they never reach the sums.
//
// Also the reference checker that tells whether a committed output is
// exactly-once (or at least at-least-once) for a given input.
#ifndef WEIR_EXAMPLES_RUNNING_SUM_H_
#define WEIR_EXAMPLES_RUNNING_SUM_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "weir/connectors.h"
#include "weir/stream.h"

namespace weir::examples {

struct RunningSumOptions {
  std::vector<std::string> inputs;  // one source per file, unioned
  std::string output_dir;
  int parallelism = 1;
  // A running-sum subtask throws after about this many records (0: never),
  // then again only after a checkpoint has completed in the new attempt, so
  // the job always progresses.
  int64_t fail_every = 0;
  uint64_t seed = 0;
  // Lines per second per source subtask (0: as fast as it goes).
  int64_t rate = 0;
  // The output sink's own parallelism behind a rebalance (0: chained to the
  // sums); and its subtask `fail_sink_subtask` failing once, in its first
  // attempt, after `fail_sink_after` lines (-1: none).
  int sink_parallelism = 0;
  int fail_sink_subtask = -1;
  int64_t fail_sink_after = 1;
  // Lines per second each output sink subtask writes at most (0: as fast
  // as it goes): a slow sink that backpressures the job, for benchmarks.
  int64_t sink_rate = 0;
  // Kafka instead of files (examples/running_sum/kafka_io.cc): the input
  // lines are the values of `input_topic` (a record's key, if a number, is
  // its line number, else its offset + 1), and the sums go to
  // `output_topic` (key: the key; value: the output line) with `delivery`;
  // rejects still go to output_dir.
  std::string kafka_brokers;
  std::string input_topic;
  bool kafka_bounded = false;  // stop at the end the input topic had at the start
  std::string output_topic;
  std::string kafka_delivery = "exactly-once";
  // PostgreSQL instead of part files (examples/running_sum/postgres_io.cc):
  // the sums go as rows (key, sum, count) into `output_table`, exactly-once
  // by two-phase commit; with `postgres_upsert`, the latest (sum, count) of
  // each key is upserted by key, so the table ends as the final sums.
  std::string postgres;  // libpq connection string
  std::string output_table;
  bool postgres_upsert = false;
};

// The line-copy job: independent pipelines (forward edges only, so each
// subtask is its own pipelined region). Subtask i reads its splits of the
// input and writes `<line number>,<line>` for each line to output_dir. With
// fail_subtask >= 0, that subtask fails once, in its first attempt, after
// fail_after lines: only its region restarts.
struct LineCopyOptions {
  std::string input;
  std::string output_dir;
  int parallelism = 1;
  int64_t rate = 0;  // lines per second per subtask (0: as fast as it goes)
  int fail_subtask = -1;
  int64_t fail_after = 1000;
};
void build_line_copy(StreamEnvironment& env, const LineCopyOptions& options);
// Whether the committed output holds every line of `input` exactly once.
absl::StatusOr<bool> check_line_copy(const std::string& input, const std::string& output_dir,
                                     std::vector<std::string>* problems);

// Output prefixes inside output_dir.
inline constexpr char kOutputPrefix[] = "part";
inline constexpr char kRejectsPrefix[] = "rejects";

void build_running_sum(StreamEnvironment& env, const RunningSumOptions& options);

// The Kafka ends of running-sum.
DataStream<TextLine> kafka_lines(StreamEnvironment& env, const RunningSumOptions& options);
void sink_to_kafka(const DataStream<std::string>& lines, const RunningSumOptions& options);
void sink_to_postgres(const DataStream<std::string>& lines, const RunningSumOptions& options);

// One input line, `key,value` with a 64-bit integer value (an optional
// leading '+'): the key and value, or why the line is rejected.
struct ParsedLine {
  bool ok = false;
  std::string key;
  int64_t value = 0;
  std::string reason;
};
ParsedLine parse_running_sum_line(std::string_view text);

struct RunningSumCheck {
  int64_t input_lines = 0;
  int64_t valid_records = 0;
  int64_t keys = 0;
  int64_t expected_rejects = 0;
  int64_t output_lines = 0;
  int64_t reject_lines = 0;
  bool exactly_once = false;
  bool nothing_lost = false;
  // Nothing twice, and state agrees with the output: each key's committed
  // counts are exactly 1..m and its sums' differences are m of its values
  // (the records lost affected neither).
  bool at_most_once = false;
  int64_t lost_records = 0;        // valid records with no committed sum
  int64_t lost_rejects = 0;        // malformed lines with no committed reject
  int64_t duplicated_records = 0;  // committed sums of a record seen before
  // Committed sums of a key that come (in commit order) after a sum of a
  // later record of the key: each key's sums are promised in order.
  int64_t out_of_order_records = 0;
  std::vector<std::string> problems;  // the first few differences found
};

// Compares the committed output in `output_dir` with what `inputs` imply.
// `output_lines`, when given, are the sums instead of output_dir's part
// files (read from a Kafka topic); the rejects are always output_dir's.
// `lines_done`, when given, counts the input and output lines looked at so
// far, for a progress display on another thread.
absl::StatusOr<RunningSumCheck> check_running_sum(const std::vector<std::string>& inputs,
                                                  const std::string& output_dir,
                                                  const std::vector<std::string>* output_lines = nullptr,
                                                  std::atomic<int64_t>* lines_done = nullptr);

// Writes `lines` lines of `key,value` over `keys` keys, every
// `bad_every`-th one malformed (0: none), deterministic for `seed`.
// `lines_done`, when given, counts the lines written so far.
absl::Status generate_running_sum_input(const std::string& path, int64_t lines, int64_t keys,
                                        int64_t bad_every, uint64_t seed,
                                        std::atomic<int64_t>* lines_done = nullptr);

}  // namespace weir::examples

#endif  // WEIR_EXAMPLES_RUNNING_SUM_H_
