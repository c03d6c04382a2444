// The arguments of a job library's build function, read as Flink's
// ParameterTool reads a job's: `--name value`, `--name=value` and bare
// `--flag`s, each read once by a typed getter that also says what the
// option is for. After the reads, status() names the first problem (an
// unknown argument, a value missing or malformed, a required option not
// given), and usage() lists the options a line each.
//
//   absl::Status build(weir::StreamEnvironment& env, const std::vector<std::string>& argv) {
//     weir::JobArgs args(argv);
//     const std::string input = args.required("input", "text to count the words of");
//     const int64_t rate = args.get_int("rate", "lines/s per source subtask (0: unlimited)", 0, 0);
//     if (!args.status().ok()) return args.status();
//     ...
#ifndef WEIR_JOB_ARGS_H_
#define WEIR_JOB_ARGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "weir/config.h"

namespace weir {

class JobArgs {
 public:
  explicit JobArgs(const std::vector<std::string>& args);
  ~JobArgs();
  JobArgs(const JobArgs&) = delete;
  JobArgs& operator=(const JobArgs&) = delete;

  // While a Listing lives on a thread, every JobArgs that ends on that
  // thread adds its usage() to it: how `weir run LIBRARY.so --help` lists
  // the options a library's build function reads.
  class Listing {
   public:
    Listing();
    ~Listing();
    Listing(const Listing&) = delete;
    Listing& operator=(const Listing&) = delete;
    const std::string& text() const { return text_; }

   private:
    friend class JobArgs;
    std::string text_;
    Listing* previous_;
  };

  // The value of --name; `fallback` when not given.
  std::string get(std::string_view name, std::string_view help, std::string fallback = "");
  // The value of --name; an error (and "") when not given.
  std::string required(std::string_view name, std::string_view help);
  // A whole number in [min, max]; `fallback` when not given.
  int64_t get_int(std::string_view name, std::string_view help, int64_t fallback, int64_t min = INT64_MIN,
                  int64_t max = INT64_MAX);
  // A duration as the job flags take them ("500ms", "1.5s", "1h30m").
  Duration get_duration(std::string_view name, std::string_view help, Duration fallback);
  // True when --name is given (no value; --name=false reads false).
  bool flag(std::string_view name, std::string_view help);
  // Whether --name was given.
  bool has(std::string_view name) const { return values_.count(std::string(name)) != 0; }

  // OK when every argument was read and valid; otherwise the first problem,
  // naming the option and, for an unknown one, the options there are.
  absl::Status status() const;
  // The options read so far, a line each: "--name VALUE  help (default: x)".
  std::string usage() const;

 private:
  struct Declared {
    std::string name, value_word, help, fallback;
  };
  // Records --name as declared; its raw value, if given.
  const std::string* take(std::string_view name, std::string_view value_word, std::string_view help,
                          std::string fallback);
  void fail(std::string message);

  std::map<std::string, std::string> values_;  // --name -> value ("" for a bare flag)
  std::vector<std::string> positional_;        // arguments that are not options
  std::vector<Declared> declared_;
  std::string first_error_;
};

}  // namespace weir

#endif  // WEIR_JOB_ARGS_H_
