// PostgresSource: a table read once in primary-key order, resumable after
// the last key emitted. See weir/postgres.h and docs/postgres.md.
#include <deque>
#include <stdexcept>

#include "connectors/pg_session.h"
#include "weir/context.h"
#include "weir/postgres.h"

namespace weir {

absl::Status PostgresSourceOptions::validate() const {
  if (conninfo.empty()) return absl::InvalidArgumentError("postgres source: no connection string");
  if (table.empty()) return absl::InvalidArgumentError("postgres source: no table");
  if (columns.empty()) return absl::InvalidArgumentError("postgres source of " + table + ": no columns");
  if (!expressions.empty() && expressions.size() != columns.size()) {
    return absl::InvalidArgumentError("postgres source of " + table + ": an expression per column, or none");
  }
  if (key_columns.empty()) {
    return absl::InvalidArgumentError("postgres source of " + table +
                                      ": needs the table's primary key (rows are read in its order and resumed after it)");
  }
  if (fetch_size < 1) return absl::InvalidArgumentError("postgres source: the fetch size must be >= 1");
  return absl::OkStatus();
}

SourceFactory<PostgresRow> PostgresSource::Builder::build() const {
  PostgresSourceOptions o = o_;
  return [o] { return std::make_unique<PostgresSource>(o); };
}

namespace {

// Where a subtask's read stands: the key of the last row emitted (none:
// from the start), and whether the table is read to its end.
struct ScanPosition {
  std::vector<std::string> last_key;
  bool started = false;
  bool done = false;
  auto weir_fields() { return std::tie(last_key, started, done); }
};

}  // namespace

class PostgresSource::Impl {
 public:
  explicit Impl(PostgresSourceOptions o) : o_(std::move(o)) {}

  absl::Status open(OperatorContext& ctx) {
    absl::Status valid = o_.validate();
    if (!valid.ok()) return valid;
    state_ = std::make_unique<OperatorListState<ScanPosition>>(ctx, "postgres-scan", detail::Redistribution::kUnion);
    if (ctx.is_restored()) {
      bool corrupt = false;
      std::vector<ScanPosition> restored = state_->get(&corrupt);
      if (corrupt) return absl::DataLossError("postgres source of " + o_.table + ": its position state is corrupt");
      // Union state: the one position subtask 0 kept (another parallelism
      // than before reads on from it just the same).
      for (const ScanPosition& p : restored) {
        if (p.started) position_ = p;
      }
    }
    reader_ = ctx.subtask_index() == 0;
    if (!reader_) position_.done = true;
    if (!reader_ || position_.done) return absl::OkStatus();
    absl::Status s = session_.connect(o_.conninfo);
    if (!s.ok()) return s;
    // Text the connector reads the same whatever the server's defaults.
    s = session_.exec("SET DateStyle = ISO; SET TimeZone = 'UTC'; SET extra_float_digits = 3; SET bytea_output = hex");
    if (!s.ok()) return s;
    return prepare_query();
  }

  PollStatus poll(SourceOutput<PostgresRow>& out, int max_records) {
    for (int n = 0; n < max_records; ++n) {
      if (buffer_.empty()) {
        if (!position_.done && !exhausted_) fetch();
        if (buffer_.empty()) {  // every row emitted: a checkpoint from here on keeps that
          position_.done = true;
          return PollStatus::kEndOfInput;
        }
      }
      Fetched& f = buffer_.front();
      out.collect(f.row);
      position_.last_key = std::move(f.key);
      position_.started = true;
      buffer_.pop_front();
    }
    return PollStatus::kMore;
  }

  absl::Status snapshot_state() {
    // Only subtask 0 reads: its position is the one kept.
    state_->update(reader_ ? std::vector<ScanPosition>{position_} : std::vector<ScanPosition>{});
    return absl::OkStatus();
  }

  void close() { session_.close(); }

 private:
  struct Fetched {
    PostgresRow row;
    std::vector<std::string> key;
  };

  absl::Status prepare_query() {
    std::string select;
    for (size_t i = 0; i < o_.columns.size(); ++i) {
      select += (i > 0 ? ", " : "") + (o_.expressions.empty() ? session_.quote_ident(o_.columns[i]) : o_.expressions[i]);
    }
    std::string keys, params;
    for (size_t i = 0; i < o_.key_columns.size(); ++i) {
      const std::string k = session_.quote_ident(o_.key_columns[i]);
      select += ", " + k + "::text";
      keys += (i > 0 ? ", " : "") + k;
      params += (i > 0 ? ", " : "") + ("$" + std::to_string(i + 1));
    }
    const std::string from = " FROM " + session_.quote_ident(o_.table);
    const std::string tail = " ORDER BY " + keys + " LIMIT " + std::to_string(o_.fetch_size);
    first_query_ = "SELECT " + select + from + tail;
    next_query_ = "SELECT " + select + from + " WHERE (" + keys + ") > (" + params + ")" + tail;
    return absl::OkStatus();
  }

  // The next page after the last key read; the source fails when the
  // server does (the job restarts from its checkpoint as configured).
  void fetch() {
    auto r = position_.started ? session_.query(next_query_, position_.last_key) : session_.query(first_query_);
    if (!r.ok()) throw std::runtime_error("postgres source of " + o_.table + ": " + std::string(r.status().message()));
    PGresult* res = r->get();
    const int rows = PQntuples(res), width = static_cast<int>(o_.columns.size());
    for (int i = 0; i < rows; ++i) {
      Fetched f;
      f.row.values.reserve(static_cast<size_t>(width));
      for (int c = 0; c < width; ++c) {
        if (PQgetisnull(res, i, c)) {
          f.row.values.emplace_back(std::nullopt);
        } else {
          f.row.values.emplace_back(std::string(PQgetvalue(res, i, c), static_cast<size_t>(PQgetlength(res, i, c))));
        }
      }
      for (int k = 0; k < static_cast<int>(o_.key_columns.size()); ++k) f.key.emplace_back(PQgetvalue(res, i, width + k));
      buffer_.push_back(std::move(f));
    }
    if (rows < o_.fetch_size) exhausted_ = true;  // the last page (its rows are still to emit)
  }

  PostgresSourceOptions o_;
  pg::PgSession session_;
  std::unique_ptr<OperatorListState<ScanPosition>> state_;
  ScanPosition position_;
  bool reader_ = false;
  bool exhausted_ = false;
  std::string first_query_, next_query_;
  std::deque<Fetched> buffer_;
};

PostgresSource::PostgresSource(PostgresSourceOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
PostgresSource::~PostgresSource() = default;
absl::Status PostgresSource::open(OperatorContext& ctx) { return impl_->open(ctx); }
PollStatus PostgresSource::poll(SourceOutput<PostgresRow>& out, int max_records) { return impl_->poll(out, max_records); }
absl::Status PostgresSource::snapshot_state(int64_t) { return impl_->snapshot_state(); }
void PostgresSource::close() { impl_->close(); }

}  // namespace weir
