// Word count, the template of a job built out of tree: reads text lines,
// splits them into words, and writes "word,count" with the running count of
// each word to part files that are published exactly once.
//
// Arguments (after weir's own job flags such as -p and --checkpoint-dir):
//   --input FILE    text to count the words of
//   --output DIR    where the part files go
//   --rate N        read at most N lines/s per source subtask (0: unlimited)
#include <weir/job_library.h>

#include <memory>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string input;
  std::string output;
  int64_t rate = 0;
};

// weir::JobArgs reads --name value and --name=value; status() names the
// first problem.
absl::StatusOr<Options> parse_args(const std::vector<std::string>& argv) {
  weir::JobArgs args(argv);
  Options o;
  o.input = args.required("input", "text to count the words of");
  o.output = args.required("output", "where the part files go");
  o.rate = args.get_int("rate", "read at most this many lines/s per source subtask (0: unlimited)", 0, 0);
  if (!args.status().ok()) return args.status();  // names the option, and the options there are
  return o;
}

// The running count of each word, in keyed state that checkpoints carry.
class CountWords final : public weir::KeyedProcessFunction<std::string, std::string, std::string> {
 public:
  absl::Status open(weir::KeyedRuntimeContext<std::string>& ctx) override {
    count_ = &ctx.get_state(weir::ValueStateDescriptor<int64_t>{"count"});
    return absl::OkStatus();
  }

  void process_element(const std::string& word, Context&, weir::Collector<std::string>& out) override {
    const int64_t n = count_->value_or(0) + 1;
    count_->update(n);
    out.collect(word + "," + std::to_string(n));
  }

 private:
  weir::ValueState<int64_t>* count_ = nullptr;
};

absl::Status build(weir::StreamEnvironment& env, const std::vector<std::string>& args) {
  auto options = parse_args(args);
  if (!options.ok()) return options.status();
  const Options o = *options;
  env.from_source<weir::TextLine>([o] { return std::make_unique<weir::FileSource>(o.input, o.rate); }, "lines")
      .uid("lines")
      .flat_map<std::string>(
          [](const weir::TextLine& line, weir::Collector<std::string>& out) {
            size_t i = 0;
            const std::string& t = line.text;
            while (i < t.size()) {
              while (i < t.size() && t[i] == ' ') ++i;
              size_t j = i;
              while (j < t.size() && t[j] != ' ') ++j;
              if (j > i) out.collect(t.substr(i, j - i));
              i = j;
            }
          },
          "split")
      .key_by([](const std::string& word) { return word; })
      .process<std::string>([] { return std::make_unique<CountWords>(); }, "count")
      .uid("count")
      .sink_to([o] { return std::make_unique<weir::ExactlyOnceFileSink>(o.output, "part"); }, "output")
      .uid("output");
  return absl::OkStatus();
}

}  // namespace

WEIR_JOB("word-count", build)
