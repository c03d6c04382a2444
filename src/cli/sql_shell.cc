#include "cli/sql_shell.h"

#include <csignal>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "cli/embedded.h"
#include "cli/exit_codes.h"
#include "cli/sql_collect.h"
#include "cluster/client.h"
#include "sql/binder.h"
#include "sql/job_builder.h"
#include "sql/result_table.h"

namespace weir::cli {
namespace {

constexpr size_t kMaxResultRows = 1'000'000;
constexpr size_t kShownWhileRunning = 40;  // rows of a table still changing
constexpr size_t kShownAtEnd = 10'000;
constexpr auto kRedraw = std::chrono::milliseconds(500);

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) { interrupted = true; }

class ResultSink final : public Sink<Row> {
 public:
  explicit ResultSink(sql::ResultTable* table) : table_(table) {}
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const Row& row) override {
    table_->apply(row);
    return absl::OkStatus();
  }

 private:
  sql::ResultTable* const table_;
};

// Whether `text` ends a statement: its last character outside quotes and
// comments is ';'.
bool ends_statement(const std::string& text) {
  char last = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\'' || c == '"') {
      const size_t close = text.find(c, i + 1);
      if (close == std::string::npos) return false;
      i = close;
      last = c;
    } else if (c == '-' && i + 1 < text.size() && text[i + 1] == '-') {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      i = text.find("*/", i + 2);
      if (i == std::string::npos) return false;
      ++i;
    } else if (!absl::ascii_isspace(static_cast<unsigned char>(c))) {
      last = c;
    }
  }
  return last == ';';
}

// How a query of the shell ended.
struct QueryEnd {
  JobStatus status = JobStatus::kFailed;  // kFinished, kCanceled or kFailed
  std::string failure;
};

// Where the shell's queries run: in this process, or on a cluster.
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `script` (the declarations, then a bare SELECT planned as
  // `planned`), applying its result's rows to `table`, until the query
  // ends, or `stop` or Ctrl-C cancels it; `tick` runs about every kRedraw
  // meanwhile.
  virtual absl::StatusOr<QueryEnd> select(const std::string& script, const sql::PlannedScript& planned,
                                          sql::ResultTable& table, const std::function<bool()>& stop,
                                          const std::function<void()>& tick) = 0;
  // Runs (embedded) or submits (cluster) `script`, the declarations and an
  // INSERT, planned as `planned`, and says what became of it.
  virtual void insert(const std::string& script, const sql::PlannedScript& planned) = 0;
};

void say(const std::string& line) { std::fprintf(stdout, "%s\n", line.c_str()); }

// Until `done()` (which waits up to kRedraw itself): `cancel` once when
// `stop` or Ctrl-C asks for it, `tick` at most every kRedraw.
void wait_for(const std::function<bool()>& done, const std::function<bool()>& stop,
              const std::function<void()>& cancel, const std::function<void()>& tick) {
  bool canceled = false;
  auto ticked = std::chrono::steady_clock::now();
  while (!done()) {
    if (!canceled && (interrupted || stop())) {
      cancel();
      canceled = true;
    }
    if (std::chrono::steady_clock::now() - ticked >= kRedraw) {
      tick();
      ticked = std::chrono::steady_clock::now();
    }
  }
}

class EmbeddedExecutor final : public Executor {
 public:
  explicit EmbeddedExecutor(const JobFlags& flags) : flags_(flags) {}

  absl::StatusOr<QueryEnd> select(const std::string&, const sql::PlannedScript& planned, sql::ResultTable& table,
                                  const std::function<bool()>& stop, const std::function<void()>& tick) override {
    auto config = this->config(false);
    if (!config.ok()) return config.status();
    StreamEnvironment env(*config);
    sql::TableConnectors connectors = cli_table_connectors();
    connectors.sinks[kResultConnector] = [&table](const DataStream<Row>& rows, bool, const sql::TableDef&,
                                                  const std::string& uid) {
      rows.sink_to([&table] { return std::make_unique<ResultSink>(&table); }, "result").uid(uid);
      return absl::OkStatus();
    };
    absl::Status built = sql::build_job(planned, connectors, env);
    if (built.ok()) built = env.build_error();
    if (!built.ok()) return built;
    auto result = run_job(env, stop, tick);
    if (!result.ok()) return result.status();
    return QueryEnd{result->status, result->failure};
  }

  void insert(const std::string&, const sql::PlannedScript& planned) override {
    auto config = this->config(true);
    if (!config.ok()) return say("error: " + std::string(config.status().message()));
    StreamEnvironment env(*config);
    absl::Status built = sql::build_job(planned, cli_table_connectors(), env);
    if (built.ok()) built = env.build_error();
    if (!built.ok()) return say("error: " + std::string(built.message()));
    auto result = run_job(env, [] { return false; }, [] {});
    if (!result.ok()) return say("error: " + std::string(result.status().message()));
    print_result(*result, stdout);
    if (result->status == JobStatus::kFailed) say("error: the job failed: " + result->failure);
  }

 private:
  absl::StatusOr<JobConfig> config(bool restarts) const {
    auto config = flags_.to_config();
    if (!config.ok()) return config;
    // A result shown is not taken back: a failed query ends.
    if (!restarts) config->restart.kind = RestartStrategyKind::kNone;
    return config;
  }

  // Runs `env`'s job until it ends, canceling it when Ctrl-C or `stop` asks.
  static absl::StatusOr<JobResult> run_job(StreamEnvironment& env, const std::function<bool()>& stop,
                                           const std::function<void()>& tick) {
    JobControl control;
    absl::StatusOr<JobResult> result = absl::UnknownError("not run");
    absl::Notification done;
    interrupted = false;
    std::thread job([&] {
      result = env.execute("sql shell", &control);
      done.Notify();
    });
    wait_for([&] { return done.WaitForNotificationWithTimeout(absl::FromChrono(kRedraw)); }, stop,
             [&] { control.cancel(); }, tick);
    job.join();
    return result;
  }

  const JobFlags& flags_;
};

// Queries on a cluster: a SELECT is the built-in job `sql --script SCRIPT
// --collect ID` with the shell's job flags, its rows read through the
// JobManager (cli/sql_collect.h); an INSERT is submitted and left running.
class ClusterExecutor final : public Executor {
 public:
  ClusterExecutor(cluster::ClusterClient* client, std::vector<std::string> job_args)
      : client_(client), job_args_(std::move(job_args)) {}

  absl::StatusOr<QueryEnd> select(const std::string& script, const sql::PlannedScript&, sql::ResultTable& table,
                                  const std::function<bool()>& stop, const std::function<void()>& tick) override {
    auto result = client_->open_result();
    if (!result.ok()) return result.status();
    std::vector<std::string> args = {"--script", script, "--collect", *result};
    args.insert(args.end(), job_args_.begin(), job_args_.end());
    auto job = client_->submit("sql", args);
    if (!job.ok()) {
      (void)client_->close_result(*result);
      return job.status();
    }
    interrupted = false;
    int64_t next = 0;
    bool end = false;
    absl::Status failed;
    std::optional<QueryEnd> ended;
    // Reads rows until the last batch came, the job ended without it
    // (failed or canceled), or reading failed.
    wait_for(
        [&] {
          if (end || ended || !failed.ok()) return true;
          auto page = client_->fetch_result(*result, next, kRedraw.count());
          if (!page.ok()) {
            failed = page.status();
            return true;
          }
          for (const std::string& batch : page->batches) {
            failed = decode_result_batch(batch, [&](Row&& row) { table.apply(row); });
            if (!failed.ok()) return true;
          }
          next = page->next;
          end = page->end;
          if (page->batches.empty() && !end) ended = ended_job(*job, nullptr);
          return end || ended.has_value();
        },
        stop, [&] { (void)client_->cancel(*job); }, tick);
    (void)client_->close_result(*result);
    if (!failed.ok()) {
      if (!ended) (void)client_->cancel(*job);
      return failed;
    }
    if (!ended) {
      // Every row came; the job ends right after its sinks.
      auto state = client_->wait(*job, 60'000);
      if (!state.ok()) return state.status();
      ended = ended_job(*job, &*state);
      if (!ended) return absl::DeadlineExceededError("job " + *job + " sent its whole result but did not end");
    }
    return *ended;
  }

  void insert(const std::string& script, const sql::PlannedScript&) override {
    std::vector<std::string> args = {"--script", script};
    args.insert(args.end(), job_args_.begin(), job_args_.end());
    auto job = client_->submit("sql", args);
    if (!job.ok()) return say("error: " + std::string(job.status().message()));
    say("job " + *job + " submitted (weir list shows it, weir cancel " + *job + " ends it)");
  }

 private:
  // How the job ended (by `state`, else by asking), or nothing while it runs.
  std::optional<QueryEnd> ended_job(const std::string& job, const nlohmann::json* state) {
    nlohmann::json asked;
    if (state == nullptr) {
      auto got = client_->job(job);
      if (!got.ok()) return QueryEnd{JobStatus::kFailed, std::string(got.status().message())};
      asked = *std::move(got);
      state = &asked;
    }
    const std::string status = state->value("status", "");
    if (status == "FINISHED") return QueryEnd{JobStatus::kFinished, ""};
    if (status == "CANCELED") return QueryEnd{JobStatus::kCanceled, ""};
    if (status == "FAILED") {
      const auto f = state->find("failure");
      return QueryEnd{JobStatus::kFailed, f != state->end() && f->is_string() ? f->get<std::string>() : ""};
    }
    return std::nullopt;
  }

  cluster::ClusterClient* const client_;
  const std::vector<std::string> job_args_;
};

class Shell {
 public:
  Shell(Executor* executor, bool interactive) : executor_(executor), interactive_(interactive) {}

  // One or more statements ending with ';'; false after QUIT.
  bool execute(const std::string& text) {
    std::string word = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
    while (!word.empty() && (word.back() == ';' || absl::ascii_isspace(static_cast<unsigned char>(word.back())))) {
      word.pop_back();
    }
    if (word == "quit" || word == "exit") return false;
    if (word == "help") return help();
    if (absl::StartsWith(word, "explain ")) return explain(std::string(absl::StripAsciiWhitespace(text)).substr(8));
    auto script = sql::parse_script(text);
    if (!script.ok()) return error(script.status());
    for (const sql::Statement& st : script->statements) {
      if (st.typed) {
        typed(st);
        continue;
      }
      if (const auto* view = std::get_if<sql::ast::CreateView>(&st.query)) {
        declare(st, absl::AsciiStrToLower(view->name.text), true, "");
      } else if (std::holds_alternative<sql::ast::Select>(st.query)) {
        run_select(st.text, false);
      } else if (std::holds_alternative<sql::ast::Insert>(st.query)) {
        run_insert(st.text);
      } else {
        say("error: " + std::get<sql::ast::OtherStatement>(st.query).what + " is not a statement of the shell (HELP lists them)");
      }
    }
    return true;
  }

 private:
  struct Declaration {
    std::string name;  // lower case
    bool view = false;
    std::string text;
  };

  static bool error(const absl::Status& s) {
    say("error: " + std::string(s.message()));
    return true;
  }

  bool help() {
    say("Statements end with ';' and may span lines.\n"
        "  CREATE TABLE ... WITH (...);  CREATE VIEW v AS SELECT ...;  DROP TABLE t;  DROP VIEW v;\n"
        "  SET \"table.optimizer.agg-phase-strategy\" = 'TWO_PHASE';  (docs/sql.md lists the settings)\n"
        "  SELECT ... [ORDER BY column [DESC], ...] [LIMIT n];   runs and shows its result (Ctrl-C cancels)\n"
        "  INSERT INTO t SELECT ...;   runs as `weir sql FILE` would\n"
        "  EXPLAIN SELECT ...;  EXPLAIN INSERT ...;  SHOW TABLES;  DESCRIBE t;  HELP;  QUIT;");
    return true;
  }

  bool show_tables(bool views_only = false) {
    bool any = false;
    for (const Declaration& d : declared_) {
      if (d.name.empty() || (views_only && !d.view)) continue;  // a SET
      say(d.name + (d.view ? " (view)" : ""));
      any = true;
    }
    if (!any) say("no tables");
    return true;
  }

  std::string declarations() const {
    std::string out;
    for (const Declaration& d : declared_) out += d.text + ";\n";
    return out;
  }

  // The declarations and `statement`, planned; errors point into `statement`.
  absl::StatusOr<sql::PlannedScript> plan(const std::string& statement, const sql::PlanOptions& options) {
    const std::string before = declarations();
    auto script = sql::parse_script(before + statement);
    if (!script.ok()) return relative(script.status(), before);
    auto planned = sql::plan_script(*script, options);
    if (!planned.ok()) return relative(planned.status(), before);
    return planned;
  }

  // "line L, column C" of an error counted from the statement's start: the
  // declarations before it are lines of their own.
  static absl::Status relative(const absl::Status& s, const std::string& before) {
    const int lines = static_cast<int>(std::count(before.begin(), before.end(), '\n'));
    std::string m(s.message());
    int line = 0;
    if (std::sscanf(m.c_str(), "line %d,", &line) == 1 && line > lines) {
      const size_t comma = m.find(',');
      m = "line " + std::to_string(line - lines) + m.substr(comma);
    }
    return absl::Status(s.code(), m);
  }

  // A statement of weir's own parser: a declaration, a DROP, a SHOW.
  void typed(const sql::Statement& st) {
    if (const auto* c = std::get_if<sql::ast::CreateTable>(&*st.typed)) {
      declare(st, absl::AsciiStrToLower(c->name.text), false, "");
    } else if (const auto* set = std::get_if<sql::ast::Set>(&*st.typed)) {
      if (!set->option) {
        for (const Declaration& d : declared_) {
          if (d.name.empty()) say(d.text);
        }
        return;
      }
      declare(st, "", false, set->option->key + " set");
    } else if (const auto* reset = std::get_if<sql::ast::Reset>(&*st.typed)) {
      declare(st, "", false, reset->key ? reset->key->text + " reset" : "every setting reset");
    } else if (const auto* drop = std::get_if<sql::ast::Drop>(&*st.typed)) {
      const std::string name = absl::AsciiStrToLower(drop->name.text);
      auto it = std::find_if(declared_.begin(), declared_.end(),
                             [&](const Declaration& d) { return d.name == name && d.view == drop->view; });
      const std::string what = std::string(drop->view ? "view " : "table ") + name;
      if (it == declared_.end()) {
        if (!drop->if_exists) say("error: no " + what);
        return;
      }
      declared_.erase(it);
      say(what + " dropped");
    } else if (std::holds_alternative<sql::ast::AlterTable>(*st.typed)) {
      declare(st, "", false, "table altered");
    } else if (const auto* show = std::get_if<sql::ast::Show>(&*st.typed)) {
      switch (show->what) {
        case sql::ast::Show::What::kTables:
        case sql::ast::Show::What::kViews:
          show_tables(show->what == sql::ast::Show::What::kViews);
          return;
        case sql::ast::Show::What::kDescribe:
          run_select("SELECT * FROM " + show->name->text, true);
          return;
        case sql::ast::Show::What::kCreateTable:
        case sql::ast::Show::What::kCreateView: {
          const std::string name = absl::AsciiStrToLower(show->name->text);
          for (const Declaration& d : declared_) {
            if (d.name == name) return say(d.text + ";");
          }
          say("error: no table or view " + name);
          return;
        }
      }
    }
  }

  // A table or view `name` (or, unnamed, a setting) for the statements
  // after it; `said`: what to say once it is planned (unnamed only).
  void declare(const sql::Statement& st, const std::string& name, bool view, const std::string& said) {
    sql::PlanOptions options;
    options.declarations_only = true;
    auto planned = plan(st.text, options);
    if (!planned.ok()) {
      error(planned.status());
      return;
    }
    declared_.push_back({name, view, st.text});
    if (name.empty()) return say(said);
    say(std::string(view ? "view " : "table ") + name + " declared");
  }

  bool explain(const std::string& statement) {
    sql::PlanOptions options;
    options.result_table = kResultTable;
    options.result_connector = kResultConnector;
    auto planned = plan(statement, options);
    if (!planned.ok()) return error(planned.status());
    std::string text = sql::explain(*planned);
    std::fputs(text.c_str(), stdout);
    return true;
  }

  bool run_select(const std::string& statement, bool describe_only) {
    sql::PlanOptions options;
    options.result_table = kResultTable;
    options.result_connector = kResultConnector;
    auto planned = plan(statement, options);
    if (!planned.ok()) return error(planned.status());
    const sql::PlanNode& sink = *planned->inserts.back().root;
    if (describe_only) {
      for (const sql::Column& c : sink.columns) say(c.name + " " + c.type.to_string());
      return true;
    }
    auto table = std::make_shared<sql::ResultTable>(sink.columns, planned->result_order, !sql::is_updating(*sink.input),
                                                    kMaxResultRows);
    // On a terminal each table replaces the one before; otherwise each
    // change is a new table, and the final one is not the last again.
    size_t drawn_lines = 0;
    uint64_t drawn_version = 0;
    bool drawn_whole = false;
    auto draw = [&](size_t max_shown) {
      const uint64_t version = table->version();
      std::string text = table->render(max_shown);
      if (interactive_ && drawn_lines > 0) std::fprintf(stdout, "\x1b[%zuF\x1b[J", drawn_lines);
      std::fputs(text.c_str(), stdout);
      if (!interactive_) std::fputs("\n", stdout);
      std::fflush(stdout);
      drawn_lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
      drawn_version = version;
      drawn_whole = text.find("\n... ") == std::string::npos;
    };
    auto result = executor_->select(
        declarations() + statement, *planned, *table, [&] { return table->limit_reached() || table->overflowed(); },
        [&] {
          if (table->version() != drawn_version) draw(kShownWhileRunning);
        });
    if (!result.ok()) return error(result.status());
    if (interactive_ || drawn_lines == 0 || table->version() != drawn_version || !drawn_whole) draw(kShownAtEnd);
    if (table->overflowed()) {
      say("error: the result passed " + std::to_string(kMaxResultRows) +
          " rows and the query was canceled (LIMIT without ORDER BY ends a query sooner; INSERT INTO a table "
          "keeps everything)");
    } else if (table->limit_reached()) {
      say("(LIMIT reached: the query was canceled)");
    } else if (result->status == JobStatus::kCanceled) {
      say("(canceled)");
    } else if (result->status != JobStatus::kFinished) {
      say("error: the query failed: " + result->failure);
    }
    return true;
  }

  bool run_insert(const std::string& statement) {
    auto planned = plan(statement, {});
    if (!planned.ok()) return error(planned.status());
    executor_->insert(declarations() + statement, *planned);
    return true;
  }

  Executor* const executor_;
  const bool interactive_;
  std::vector<Declaration> declared_;
};

// Reads statements from `in` into `shell` until its end or QUIT.
void read_statements(Shell& shell, std::istream& in, bool interactive) {
  struct sigaction action = {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  struct sigaction before = {};
  sigaction(SIGINT, &action, &before);
  if (interactive) std::fputs("weir SQL shell: statements end with ';'; HELP lists them, QUIT ends.\n", stdout);
  std::string pending;
  std::string line;
  while (true) {
    if (interactive) {
      std::fputs(pending.empty() ? "weir> " : "   -> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(in, line)) break;
    if (interrupted.exchange(false)) pending.clear();  // Ctrl-C at the prompt drops what was typed
    if (pending.empty() && absl::StripAsciiWhitespace(line).empty()) continue;
    pending += line + "\n";
    if (!ends_statement(pending)) continue;
    const std::string statement = std::move(pending);
    pending.clear();
    if (!shell.execute(statement)) break;
    std::fflush(stdout);
  }
  if (!absl::StripAsciiWhitespace(pending).empty()) {
    std::fputs("error: the input ended inside a statement (no ';' after it)\n", stdout);
  }
  sigaction(SIGINT, &before, nullptr);
}

}  // namespace

int run_sql_shell(const JobFlags& flags, std::istream& in, bool interactive) {
  if (auto config = flags.to_config(); !config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  EmbeddedExecutor executor(flags);
  Shell shell(&executor, interactive);
  read_statements(shell, in, interactive);
  return kOk;
}

int run_sql_shell_on_cluster(cluster::ClusterClient& client, const std::vector<std::string>& job_args,
                             std::istream& in, bool interactive) {
  ClusterExecutor executor(&client, job_args);
  Shell shell(&executor, interactive);
  read_statements(shell, in, interactive);
  return kOk;
}

}  // namespace weir::cli
