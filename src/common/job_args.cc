#include "weir/job_args.h"

#include <charconv>
#include <sstream>

namespace weir {

JobArgs::JobArgs(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < args.size() && args[i + 1].compare(0, 2, "--") != 0) {
      value = args[++i];
    }
    if (!values_.emplace(name, value).second) fail("--" + name + " is given twice");
  }
}

namespace {
thread_local JobArgs::Listing* t_listing = nullptr;
}  // namespace

JobArgs::Listing::Listing() : previous_(t_listing) { t_listing = this; }
JobArgs::Listing::~Listing() { t_listing = previous_; }

JobArgs::~JobArgs() {
  if (t_listing != nullptr) t_listing->text_ += usage();
}

void JobArgs::fail(std::string message) {
  if (first_error_.empty()) first_error_ = std::move(message);
}

const std::string* JobArgs::take(std::string_view name, std::string_view value_word, std::string_view help,
                                 std::string fallback) {
  declared_.push_back({std::string(name), std::string(value_word), std::string(help), std::move(fallback)});
  auto it = values_.find(std::string(name));
  return it == values_.end() ? nullptr : &it->second;
}

std::string JobArgs::get(std::string_view name, std::string_view help, std::string fallback) {
  const std::string* v = take(name, "VALUE", help, fallback);
  if (v == nullptr) return fallback;
  if (v->empty()) fail("--" + std::string(name) + " needs a value");
  return *v;
}

std::string JobArgs::required(std::string_view name, std::string_view help) {
  const std::string* v = take(name, "VALUE", help, "");
  declared_.back().fallback = "(required)";
  if (v == nullptr || v->empty()) {
    fail("--" + std::string(name) + " is required: " + std::string(help));
    return "";
  }
  return *v;
}

int64_t JobArgs::get_int(std::string_view name, std::string_view help, int64_t fallback, int64_t min, int64_t max) {
  const std::string* v = take(name, "N", help, std::to_string(fallback));
  if (v == nullptr) return fallback;
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (v->empty() || ec != std::errc() || p != v->data() + v->size()) {
    fail("--" + std::string(name) + " wants a whole number, not '" + *v + "'");
    return fallback;
  }
  if (n < min || n > max) {
    fail("--" + std::string(name) + " " + *v + " is out of range [" + std::to_string(min) + ", " +
         std::to_string(max) + "]");
    return fallback;
  }
  return n;
}

Duration JobArgs::get_duration(std::string_view name, std::string_view help, Duration fallback) {
  const std::string* v = take(name, "DURATION", help, format_duration(fallback));
  if (v == nullptr) return fallback;
  auto d = parse_duration(*v);
  if (!d.ok()) {
    fail("--" + std::string(name) + ": " + std::string(d.status().message()));
    return fallback;
  }
  return *d;
}

bool JobArgs::flag(std::string_view name, std::string_view help) {
  const std::string* v = take(name, "", help, "");
  if (v == nullptr) return false;
  if (v->empty() || *v == "true") return true;
  if (*v == "false") return false;
  fail("--" + std::string(name) + " takes no value (or =true, =false), not '" + *v + "'");
  return false;
}

absl::Status JobArgs::status() const {
  if (!first_error_.empty()) return absl::InvalidArgumentError(first_error_);
  std::string known;
  for (const Declared& d : declared_) known += (known.empty() ? "--" : ", --") + d.name;
  for (const auto& [name, value] : values_) {
    bool declared = false;
    for (const Declared& d : declared_) declared = declared || d.name == name;
    if (!declared) return absl::InvalidArgumentError("unknown argument --" + name + " (the job takes " + known + ")");
  }
  if (!positional_.empty()) {
    return absl::InvalidArgumentError("unexpected argument '" + positional_.front() + "' (the job takes " + known +
                                      ")");
  }
  return absl::OkStatus();
}

std::string JobArgs::usage() const {
  std::ostringstream out;
  for (const Declared& d : declared_) {
    std::string left = "  --" + d.name + (d.value_word.empty() ? "" : " " + d.value_word);
    if (left.size() < 30) left.resize(30, ' ');
    out << left << "  " << d.help;
    if (d.fallback == "(required)") {
      out << " (required)";
    } else if (!d.fallback.empty()) {
      out << " (default: " << d.fallback << ")";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace weir
