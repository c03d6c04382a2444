// The running-sum job, written against the public API only.
#include "running_sum.h"

#include <charconv>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <thread>

#include "weir/connectors.h"

namespace weir::examples {
namespace {

struct Parsed {
  int64_t line = 0;
  bool ok = false;
  std::string key;
  int64_t value = 0;
  std::string reason;
  auto weir_fields() { return std::tie(line, ok, key, value, reason); }
};

struct KeyValue {
  std::string key;
  int64_t value = 0;
  auto weir_fields() { return std::tie(key, value); }
};

struct Acc {
  int64_t sum = 0;
  int64_t count = 0;
  auto weir_fields() { return std::tie(sum, count); }
};

}  // namespace

ParsedLine parse_running_sum_line(std::string_view text) {
  ParsedLine p;
  size_t comma = text.find(',');
  if (comma == std::string_view::npos) {
    p.reason = "missing comma";
    return p;
  }
  if (comma == 0) {
    p.reason = "empty key";
    return p;
  }
  const char* b = text.data() + comma + 1;
  const char* e = text.data() + text.size();
  if (b != e && *b == '+') ++b;
  auto [ptr, ec] = std::from_chars(b, e, p.value);
  if (ec == std::errc::result_out_of_range) {
    p.reason = "value out of range";
    return p;
  }
  if (ec != std::errc() || ptr != e || b == e) {
    p.reason = "value is not an integer";
    return p;
  }
  p.key = std::string(text.substr(0, comma));
  p.ok = true;
  return p;
}

namespace {

Parsed parse(const TextLine& l) {
  ParsedLine pl = parse_running_sum_line(l.text);
  Parsed p;
  p.line = l.line_number;
  p.ok = pl.ok;
  p.key = std::move(pl.key);
  p.value = pl.value;
  p.reason = std::move(pl.reason);
  return p;
}

class RunningSum final : public KeyedProcessFunction<std::string, KeyValue, std::string> {
 public:
  RunningSum(int64_t fail_every, uint64_t seed) : fail_every_(fail_every), seed_(seed) {}

  absl::Status open(KeyedRuntimeContext<std::string>& ctx) override {
    acc_ = &ctx.get_state(ValueStateDescriptor<Acc>{"acc"});
    const OperatorContext& op = ctx.operator_context();
    // The first attempt may fail at once; later ones only after progress.
    armed_ = op.attempt() == 0;
    rng_.seed(seed_ * 1000003 + op.subtask_index() * 7919 + op.attempt());
    next_threshold();
    return absl::OkStatus();
  }

  void process_element(const KeyValue& kv, Context&, Collector<std::string>& out) override {
    Acc a = acc_->value_or(Acc{});
    // Sums wrap around in two's complement rather than overflow.
    a.sum = static_cast<int64_t>(static_cast<uint64_t>(a.sum) + static_cast<uint64_t>(kv.value));
    a.count += 1;
    acc_->update(a);
    line_.clear();
    line_.append(kv.key).push_back(',');
    append_int(a.sum);
    line_.push_back(',');
    append_int(a.count);
    out.collect(line_);
    if (fail_every_ > 0 && armed_ && ++processed_ >= threshold_) {
      armed_ = false;
      throw std::runtime_error("injected failure after " + std::to_string(processed_) +
                               " records");
    }
  }

  void notify_checkpoint_complete(int64_t) override { armed_ = fail_every_ > 0; }

 private:
  void append_int(int64_t v) {
    char buf[24];
    auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    line_.append(buf, p);
  }
  void next_threshold() {
    // Uniform in [fail_every / 2, 3 * fail_every / 2].
    if (fail_every_ <= 0) return;
    threshold_ = fail_every_ / 2 + static_cast<int64_t>(rng_() % (fail_every_ + 1));
    if (threshold_ < 1) threshold_ = 1;
  }

  const int64_t fail_every_;
  const uint64_t seed_;
  ValueState<Acc>* acc_ = nullptr;
  bool armed_ = false;
  int64_t processed_ = 0;
  int64_t threshold_ = 0;
  std::mt19937_64 rng_;
  std::string line_;
};

// The file sink, failing once in one subtask's first attempt.
class FailingOnceSink final : public Sink<std::string> {
 public:
  FailingOnceSink(std::string dir, int fail_subtask, int64_t fail_after, int64_t lines_per_second)
      : sink_(std::move(dir), kOutputPrefix),
        fail_subtask_(fail_subtask),
        fail_after_(fail_after),
        rate_(lines_per_second),
        slow_(lines_per_second > 0),
        line_interval_(slow_ ? std::chrono::microseconds(1'000'000 / lines_per_second) : std::chrono::microseconds(0)) {}
  absl::Status open(OperatorContext& ctx) override {
    armed_ = ctx.subtask_index() == fail_subtask_ && ctx.attempt() == 0;
    rate_.start(&ctx.processing_time());
    return sink_.open(ctx);
  }
  absl::Status write(const std::string& line) override {
    if (armed_ && ++written_ >= fail_after_) {
      armed_ = false;
      throw std::runtime_error("injected failure after " + std::to_string(written_) + " lines");
    }
    // A slow system behind the sink: the write takes until the rate allows
    // it, holding up the task as a blocking client call would.
    while (slow_ && rate_.allow(1) == 0) std::this_thread::sleep_for(line_interval_);
    return sink_.write(line);
  }
  absl::Status finish() override { return sink_.finish(); }
  absl::Status snapshot_state(int64_t id) override { return sink_.snapshot_state(id); }
  void notify_checkpoint_complete(int64_t id) override { sink_.notify_checkpoint_complete(id); }
  void close() override { sink_.close(); }

 private:
  ExactlyOnceFileSink sink_;
  const int fail_subtask_;
  const int64_t fail_after_;
  RateLimiter rate_;
  const bool slow_;
  const std::chrono::microseconds line_interval_;  // one line's share of a second
  bool armed_ = false;
  int64_t written_ = 0;
};

}  // namespace

void build_running_sum(StreamEnvironment& env, const RunningSumOptions& o) {
  env.config().default_parallelism = o.parallelism;
  std::optional<DataStream<TextLine>> lines;
  if (!o.input_topic.empty()) lines = kafka_lines(env, o);
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    std::string path = o.inputs[i];
    const int64_t rate = o.rate;
    auto src = env.from_source<TextLine>([path, rate] { return std::make_unique<FileSource>(path, rate); },
                                         "source-" + std::to_string(i));
    src.uid("file-source-" + std::to_string(i)).parallelism(o.parallelism);
    lines = lines ? lines->union_with(src) : src;
  }
  if (!lines) {
    env.record_error(absl::InvalidArgumentError("running-sum: no input (give a file or a topic)"));
    return;
  }
  auto parsed = lines->map(parse, "parse").uid("parse");
  parsed.parallelism(o.parallelism);
  std::string out_dir = o.output_dir;

  parsed.filter([](const Parsed& p) { return !p.ok; }, "rejected")
      .map([](const Parsed& p) { return std::to_string(p.line) + "," + p.reason; }, "format-reject")
      .sink_to([out_dir] { return std::make_unique<ExactlyOnceFileSink>(out_dir, kRejectsPrefix); },
               "rejects-sink")
      .uid("rejects-sink")
      .parallelism(o.parallelism);

  int64_t fail_every = o.fail_every;
  uint64_t seed = o.seed;
  auto sums =
      parsed.filter([](const Parsed& p) { return p.ok; }, "valid")
          .map([](const Parsed& p) { return KeyValue{p.key, p.value}; }, "to-key-value")
          .key_by([](const KeyValue& kv) { return kv.key; })
          .process<std::string>(
              [fail_every, seed] { return std::make_unique<RunningSum>(fail_every, seed); },
              "running-sum");
  sums.uid("running-sum").parallelism(o.parallelism);
  if (!o.output_topic.empty()) return sink_to_kafka(sums, o);
  if (!o.output_table.empty()) return sink_to_postgres(sums, o);
  const int fail_subtask = o.fail_sink_subtask;
  const int64_t fail_after = o.fail_sink_after, sink_rate = o.sink_rate;
  auto sink = [out_dir, fail_subtask, fail_after, sink_rate] {
    return std::make_unique<FailingOnceSink>(out_dir, fail_subtask, fail_after, sink_rate);
  };
  if (o.sink_parallelism > 0) {
    // A vertex of its own, behind a rebalance.
    sums.rebalance().sink_to(sink, "output-sink").uid("output-sink").parallelism(o.sink_parallelism);
    return;
  }
  // Chained to running-sum: forward, same parallelism.
  sums.sink_to(sink, "output-sink").uid("output-sink").parallelism(o.parallelism);
}

void build_line_copy(StreamEnvironment& env, const LineCopyOptions& o) {
  env.config().default_parallelism = o.parallelism;
  const std::string path = o.input, out_dir = o.output_dir;
  const int64_t rate = o.rate, fail_after = o.fail_after;
  const int fail_subtask = o.fail_subtask;
  env.from_source<TextLine>([path, rate] { return std::make_unique<FileSource>(path, rate); }, "source")
      .uid("file-source")
      .parallelism(o.parallelism)
      .map([](const TextLine& l) { return std::to_string(l.line_number) + "," + l.text; }, "number")
      .uid("number")
      .parallelism(o.parallelism)
      .sink_to([out_dir, fail_subtask, fail_after] {
        return std::make_unique<FailingOnceSink>(out_dir, fail_subtask, fail_after, 0);
      }, "sink")
      .uid("sink")
      .parallelism(o.parallelism);
}

absl::StatusOr<bool> check_line_copy(const std::string& input, const std::string& output_dir,
                                     std::vector<std::string>* problems) {
  std::ifstream in(input);
  if (!in) return absl::NotFoundError("cannot read " + input);
  std::map<std::string, int> expected;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    expected[std::to_string(n) + "," + line] += 1;
  }
  auto out = read_published_lines(output_dir, kOutputPrefix);
  if (!out.ok()) return out.status();
  for (const auto& l : *out) expected[l] -= 1;
  bool ok = true;
  for (const auto& [l, n] : expected) {
    if (n == 0) continue;
    ok = false;
    if (problems->size() < 5) {
      problems->push_back((n > 0 ? "missing: " : "duplicated: ") + l);
    }
  }
  return ok;
}

}  // namespace weir::examples
