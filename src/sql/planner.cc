#include "sql/planner.h"

#include <algorithm>
#include <functional>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sql/binder.h"
#include "sql/datagen_table.h"
#include "sql/query_planner.h"
#include "sql/rules.h"
#include "sql/table_options.h"
#include "weir/config.h"

namespace weir::sql {
namespace {

class Planner {
 public:
  Planner(const Script& script, const PlanOptions& options)
      : script_(script), options_(options), binder_(script.text) {
    for (const Statement& st : script.statements) {
      temporal_.insert(temporal_.end(), st.temporal.begin(), st.temporal.end());
      partitions_.insert(partitions_.end(), st.partitions.begin(), st.partitions.end());
    }
  }

  absl::StatusOr<PlannedScript> run() {
    PlannedScript out;
    for (const Statement& st : script_.statements) {
      if (st.typed) {
        absl::Status s = std::visit([&](const auto& typed) { return declare(typed, &out.settings); }, *st.typed);
        if (!s.ok()) return s;
        continue;
      }
      if (const auto* view = std::get_if<ast::CreateView>(&st.query)) {
        absl::Status v = create_view(*view, st.offset, st.if_not_exists);
        if (!v.ok()) return v;
      } else if (const auto* ins = std::get_if<ast::Insert>(&st.query)) {
        auto p = insert(*ins, st.offset);
        if (!p.ok()) return p.status();
        out.inserts.push_back({st.text, st.offset, *std::move(p)});
      } else if (const auto* select = std::get_if<ast::Select>(&st.query)) {
        if (options_.result_table.empty()) {
          return error(st.offset, "a SELECT needs a table to go to: INSERT INTO <table> SELECT ...");
        }
        if (!out.inserts.empty()) return error(st.offset, "one SELECT at a time");
        auto p = result_query(*select, st.offset, &out.result_order);
        if (!p.ok()) return p.status();
        out.inserts.push_back({st.text, st.offset, *std::move(p)});
      } else {
        return unsupported(st.offset, std::get<ast::OtherStatement>(st.query).what +
                                          " (CREATE TABLE, CREATE VIEW, SET and INSERT INTO ... SELECT are the statements of a job)");
      }
    }
    if (out.inserts.empty() && !options_.declarations_only) return absl::InvalidArgumentError("the script has no INSERT INTO ... SELECT: nothing to run");
    out.tables = std::move(tables_);
    return out;
  }

 private:
  absl::Status error(int offset, const std::string& what) const { return sql_error(script_.text, offset, what); }
  absl::Status unsupported(int offset, const std::string& what) const {
    return sql_unsupported(script_.text, offset, what);
  }

  const TableDef* find_table(const std::string& name) const {
    auto it = by_name_.find(absl::AsciiStrToLower(name));
    return it == by_name_.end() ? nullptr : &tables_[it->second];
  }

  // ---- CREATE TABLE ---------------------------------------------------------

  // ---- CREATE TABLE and the other declarations -------------------------------

  absl::Status declare(const ast::CreateTable& c, Settings*) {
    if (find_table(c.name.text) != nullptr || find_view(c.name.text) != nullptr) {
      if (c.if_not_exists) return absl::OkStatus();
      return error(c.name.offset, "table " + c.name.text + " is declared twice");
    }
    auto t = create_table(c);
    if (!t.ok()) return t.status();
    by_name_[absl::AsciiStrToLower(t->name)] = tables_.size();
    tables_.push_back(*std::move(t));
    return absl::OkStatus();
  }

  absl::Status declare(const ast::Set& set, Settings* settings) {
    if (!set.option) return unsupported(0, "SET without a key in a script (the SQL shell lists the settings)");
    return setting(set.option->key, set.option->value, set.option->offset, settings);
  }

  absl::Status declare(const ast::Reset& reset, Settings* settings) {
    if (!reset.key) {
      *settings = Settings{};
      return absl::OkStatus();
    }
    // The key's default, set as SET would set it (an unknown key is its error).
    static const std::map<std::string, std::string> kDefaults = {
        {"table.optimizer.agg-phase-strategy", "AUTO"},
        {"table.exec.mini-batch.size", std::to_string(Settings{}.mini_batch_rows)},
        {"table.exec.mini-batch.allow-latency", std::to_string(Settings{}.mini_batch_latency_ms) + "ms"},
        {"table.exec.mini-batch.enabled", "true"}};
    auto d = kDefaults.find(reset.key->text);
    if (d == kDefaults.end() && options_.job_setting &&
        !absl::IsNotFound(options_.job_setting(reset.key->text, ""))) {  // a job key: its default again
      auto& job = settings->job;
      job.erase(std::remove_if(job.begin(), job.end(), [&](const auto& s) { return s.first == reset.key->text; }), job.end());
      return absl::OkStatus();
    }
    if (d == kDefaults.end()) {
      return error(reset.key->offset, "RESET: unknown setting '" + reset.key->text + "'" + setting_hint(reset.key->text));
    }
    return setting(d->first, d->second, reset.key->offset, settings);
  }

  absl::Status declare(const ast::Drop& drop, Settings*) {
    const std::string key = absl::AsciiStrToLower(drop.name.text);
    if (drop.view) {
      if (views_.erase(key) == 0 && !drop.if_exists) return error(drop.name.offset, "no view " + drop.name.text);
      return absl::OkStatus();
    }
    auto it = by_name_.find(key);
    if (it == by_name_.end()) {
      if (drop.if_exists) return absl::OkStatus();
      return error(drop.name.offset, "no table " + drop.name.text);
    }
    tables_.erase(tables_.begin() + static_cast<long>(it->second));
    by_name_.clear();
    for (size_t i = 0; i < tables_.size(); ++i) by_name_[absl::AsciiStrToLower(tables_[i].name)] = i;
    return absl::OkStatus();
  }

  absl::Status declare(const ast::AlterTable& alter, Settings*) {
    auto it = by_name_.find(absl::AsciiStrToLower(alter.name.text));
    if (it == by_name_.end()) return error(alter.name.offset, "no table " + alter.name.text);
    TableDef& t = tables_[it->second];
    if (alter.rename_to) {
      const std::string& to = alter.rename_to->text;
      if (find_table(to) != nullptr || find_view(to) != nullptr) return error(alter.rename_to->offset, to + " is declared already");
      t.name = to;
      by_name_.erase(it);
      by_name_[absl::AsciiStrToLower(to)] = static_cast<size_t>(&t - tables_.data());
      return absl::OkStatus();
    }
    std::map<std::string, std::string> options = t.options;
    for (const ast::Option& o : alter.set) options[o.key] = o.value;
    for (const ast::Name& k : alter.reset) {
      if (k.text == "connector") return error(k.offset, "a table's connector cannot be reset");
      options.erase(k.text);
    }
    std::vector<ast::Option> spelled = alter.set;
    absl::Status s = set_options(&t, std::move(options), spelled, alter.name.offset);
    if (!s.ok()) return s;
    return absl::OkStatus();
  }

  absl::Status declare(const ast::Show& show, Settings*) {
    const char* what = show.what == ast::Show::What::kDescribe ? "DESCRIBE" : "SHOW";
    return error(show.name ? show.name->offset : 0,
                 std::string(what) + " is a statement of the SQL shell (weir sql without a file), not of a job's script");
  }

  // Type `d` as weir holds it; a ROW is flattened by the caller.
  absl::StatusOr<Type> column_type(const ast::DataType& d) { return sql_type(d, script_.text); }

  // The columns of ROW `d` named `prefix` + field, flattened: person.id,
  // person.name, ... (a ROW in a ROW: a.b.c).
  absl::Status flatten(const std::string& prefix, const ast::DataType& d, std::vector<Column>* out) {
    if (d.name != "ROW") {
      auto type = column_type(d);
      if (!type.ok()) return type.status();
      out->push_back({prefix, *type});
      return absl::OkStatus();
    }
    for (size_t i = 0; i < d.elements.size(); ++i) {
      absl::Status s = flatten(prefix + "." + d.field_names[i].text, d.elements[i], out);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TableDef> create_table(const ast::CreateTable& c) {
    TableDef t;
    t.name = c.name.text;
    t.offset = c.offset;
    std::map<std::string, std::string> options;
    std::vector<std::string> primary_key;
    std::vector<std::string> partition_by;
    bool like_watermark = false;
    // LIKE: the other table's columns first, and (unless excluded) its
    // options, watermark, computed columns and keys; this table's options
    // overwrite its.
    if (c.like) {
      const TableDef* base = find_table(c.like->text);
      if (base == nullptr) return error(c.like->offset, "no table " + c.like->text + " to be LIKE");
      auto included = [&](const std::string& what) {
        bool in = true;
        for (const auto& o : c.like_options) {
          if (o.what == what || o.what == "ALL") in = o.how != "EXCLUDING";
        }
        return in;
      };
      for (const Column& col : base->columns) {
        if (base->computed_expr(col.name) != nullptr && !included("GENERATED")) continue;
        t.columns.push_back(col);
      }
      if (included("GENERATED")) t.computed = base->computed;
      if (included("OPTIONS")) options = base->options;
      if (!included("CONSTRAINTS")) options.erase("primary-key");
      if (!included("PARTITIONS")) options.erase("partition-by");
      if (included("WATERMARKS") && base->watermark) t.watermark = base->watermark, like_watermark = true;
    }
    // The physical (and metadata) columns, ROWs flattened.
    for (const ast::ColumnDef& col : c.columns) {
      if (col.kind == ast::ColumnDef::Kind::kComputed) {
        t.columns.push_back({col.name.text, Type{}});  // typed below, once every physical column is known
        continue;
      }
      std::vector<Column> flat;
      absl::Status s = flatten(col.name.text, col.type, &flat);
      if (!s.ok()) return s;
      for (Column& f : flat) {
        if (t.index_of(f.name) >= 0) return error(col.name.offset, "column " + f.name + " is declared twice");
        t.columns.push_back(std::move(f));
      }
      if (col.primary_key) primary_key.push_back(col.name.text);
      if (col.kind == ast::ColumnDef::Kind::kMetadata) {
        const std::string key = col.from.value_or(col.name.text);
        if (key != "timestamp") {
          return unsupported(col.name.offset, "METADATA FROM '" + key + "' (a Kafka record's 'timestamp' is supported)");
        }
        options["metadata.timestamp"] = col.name.text;
      }
    }
    // Computed columns: expressions over the physical ones.
    std::vector<Column> physical;
    for (const Column& col : t.columns) {
      if (t.computed_expr(col.name) == nullptr) physical.push_back(col);
    }
    for (const ast::ColumnDef& col : c.columns) {
      if (col.kind != ast::ColumnDef::Kind::kComputed) continue;
      auto parsed = parse_expression(script_, col.expr);
      if (!parsed.ok()) return parsed.status();
      auto e = binder_.bind(*parsed, {Scope{t.name, physical}});
      if (!e.ok()) return e.status();
      // Over the table's columns as declared (the physical ones keep
      // their places among them).
      std::vector<int> at;
      for (const Column& p : physical) at.push_back(t.index_of(p.name));
      std::function<void(Expr&)> renumber = [&](Expr& x) {
        if (x.kind == Expr::Kind::kColumn) x.column = at[static_cast<size_t>(x.column)];
        for (Expr& a : x.args) renumber(a);
      };
      renumber(*e);
      t.columns[static_cast<size_t>(t.index_of(col.name.text))].type = e->type;
      t.computed.emplace_back(col.name.text, *std::move(e));
    }
    for (const ast::Name& k : c.primary_key) primary_key.push_back(k.text);
    for (const std::string& k : primary_key) {
      const int i = t.index_of(k);
      if (i < 0) return error(c.offset, "table " + t.name + ": primary key column " + k + " is not a column");
      if (t.computed_expr(k) != nullptr) return error(c.offset, "table " + t.name + ": primary key column " + k + " is computed");
      t.columns[i].type.nullable = false;
    }
    if (!primary_key.empty()) options["primary-key"] = absl::StrJoin(primary_key, ",");
    // PARTITIONED BY (c, ...): a filesystem table's subdirectories.
    for (const ast::Name& p : c.partitioned_by) {
      if (t.index_of(p.text) < 0) return error(p.offset, "table " + t.name + ": partition column " + p.text + " is not a column");
      partition_by.push_back(p.text);
    }
    if (!partition_by.empty()) {
      if (partition_by.size() == t.columns.size()) return error(c.offset, "table " + t.name + ": every column is a partition column");
      options["partition-by"] = absl::StrJoin(partition_by, ",");
    }
    for (const ast::Option& o : c.options) options[o.key] = o.value;
    absl::Status s = set_options(&t, std::move(options), c.options, c.offset);
    if (!s.ok()) return s;
    if (c.watermark) {
      if (t.watermark && !like_watermark) return error(c.watermark->offset, "table " + t.name + " has a watermark option and a WATERMARK clause");
      const int i = t.index_of(c.watermark->column.text);
      if (i < 0) return error(c.watermark->column.offset, "WATERMARK FOR " + c.watermark->column.text + ": no such column");
      auto parsed = parse_expression(script_, c.watermark->expr);
      if (!parsed.ok()) return parsed.status();
      auto spec = watermark_of(t, *parsed, c.watermark->expr.begin);
      if (!spec.ok()) return spec.status();
      if (!absl::EqualsIgnoreCase(spec->column, t.columns[i].name)) {
        return error(c.watermark->expr.begin, "WATERMARK FOR " + t.columns[i].name + " AS ...: the expression is " +
                                                  t.columns[i].name + " or " + t.columns[i].name + " - INTERVAL ...");
      }
      t.watermark = *spec;
    }
    return t;
  }

  // The table's options, Flink's spellings mapped, each checked against
  // its connector's; `spelled`: the options as written, for positions.
  absl::Status set_options(TableDef* t, std::map<std::string, std::string> options, const std::vector<ast::Option>& spelled,
                           int offset) {
    auto at = [&](const std::string& key) {
      for (const ast::Option& o : spelled) {
        if (o.key == key) return o.offset;
      }
      return offset;
    };
    absl::Status normal = normalize_options(&options);
    if (!normal.ok()) return error(at("connector"), "table " + t->name + ": " + std::string(normal.message()));
    auto connector = options.find("connector");
    if (connector == options.end()) {
      return error(offset, "table " + t->name + " has no connector: WITH ('connector' = '" +
                               absl::StrJoin(known_connectors(), "' | '") + "', ...)");
    }
    const auto& known = known_connectors();
    if (std::find(known.begin(), known.end(), connector->second) == known.end()) {
      std::string message = "table " + t->name + ": unknown connector '" + connector->second + "'";
      const std::string near = nearest(connector->second, known);
      message += near.empty() ? " (known: " + absl::StrJoin(known, ", ") + ")" : " (did you mean '" + near + "'?)";
      return error(at("connector"), message);
    }
    for (const auto& [key, value] : options) {
      const std::string why = check_option(connector->second, options, key);
      if (!why.empty()) return error(at(key), "table " + t->name + ": " + why);
    }
    if (connector->second == "datagen") {
      TableDef checked = *t;
      checked.options = options;
      std::string key;
      if (const std::string why = check_datagen_options(checked, &key); !why.empty()) return error(at(key), why);
    }
    if (const std::string why = check_formats(connector->second, options); !why.empty()) {
      return error(options.contains("value.format") ? at("value.format") : at("format"), "table " + t->name + ": " + why);
    }
    t->options = std::move(options);
    if (auto w = t->options.find("watermark"); w != t->options.end()) {
      auto spec = watermark(*t, w->second, at("watermark"));
      if (!spec.ok()) return spec.status();
      t->watermark = *spec;
    }
    return absl::OkStatus();
  }

  // `watermark = 'ts - INTERVAL ''4'' SECOND'` (or just 'ts'): weir's
  // former spelling of WATERMARK FOR ts AS ts - INTERVAL '4' SECOND.
  absl::StatusOr<WatermarkSpec> watermark(const TableDef& t, const std::string& text, int offset) {
    auto parsed = parse_script("SELECT " + text);
    const std::string what = "table " + t.name + ": watermark '" + text + "'";
    // The text must parse as one bare expression: a SELECT of one target and
    // nothing else (a comment, a second statement or a FROM in the option fails).
    const ast::Expr* target = nullptr;
    if (parsed.ok() && parsed->statements.size() == 1 && !parsed->statements[0].typed) {
      const auto* select = std::get_if<ast::Select>(&parsed->statements[0].query);
      const bool bare = select != nullptr && select->set_op == ast::Select::SetOp::kNone && select->from.empty() &&
                        !select->where && select->group_by.empty() && !select->having && !select->distinct &&
                        select->order_by.empty() && !select->limit && select->unsupported.empty();
      if (bare && select->targets.size() == 1) target = &select->targets[0].expr;
    }
    if (target == nullptr) return error(offset, what + ": not an expression (ts or ts - INTERVAL 'n' SECOND)");
    auto spec = watermark_of(t, *target, -1, parsed->text);
    if (!spec.ok()) return error(offset, what + ": " + std::string(spec.status().message()));
    return spec;
  }

  // The watermark `e` says: a TIMESTAMP(3) column, or one minus a constant
  // INTERVAL. `text`: the script `e` points into (the script's, when
  // empty); errors at `offset` (where `e` points when -1).
  absl::StatusOr<WatermarkSpec> watermark_of(const TableDef& t, const ast::Expr& tree, int offset, std::string_view text = {}) {
    const std::string_view in = text.empty() ? std::string_view(script_.text) : text;
    auto e = Binder(in).bind(tree, {Scope{t.name, t.columns}});
    if (!e.ok()) return e.status();
    WatermarkSpec spec;
    const Expr* col = &*e;
    if (e->kind == Expr::Kind::kCall && e->op == Op::kSubtract && e->args[1].kind == Expr::Kind::kLiteral &&
        e->args[1].type.kind == TypeKind::kInterval) {
      spec.delay_ms = std::get<int64_t>(e->args[1].literal);
      col = &e->args[0];
    }
    if (col->kind != Expr::Kind::kColumn || col->type.kind != TypeKind::kTimestamp || spec.delay_ms < 0) {
      const std::string why = "must be a TIMESTAMP(3) column, or one minus a constant INTERVAL";
      if (offset >= 0) return error(offset, "the watermark " + why);
      return absl::InvalidArgumentError(why);
    }
    if (const Expr* computed = t.computed_expr(t.columns[col->column].name);
        computed != nullptr && computed->kind == Expr::Kind::kCall && computed->op == Op::kProctime) {
      return error(offset >= 0 ? offset : 0, "a watermark on PROCTIME(): processing time needs none");
    }
    spec.column = t.columns[col->column].name;
    return spec;
  }

  const ast::CreateView* find_view(const std::string& name) const {
    auto it = views_.find(absl::AsciiStrToLower(name));
    return it == views_.end() ? nullptr : &it->second;
  }

  QueryPlanner query_planner() const {
    return QueryPlanner(
        script_.text, [this](const std::string& n) { return find_table(n); },
        [this](const std::string& n) { return find_view(n); }, &temporal_, &partitions_);
  }

  // ---- CREATE VIEW --------------------------------------------------------------

  // CREATE VIEW v [(c, ...)] AS SELECT ...: planned here (an error names the
  // view's own text), then planned again where a query reads it.
  absl::Status create_view(const ast::CreateView& v, int offset, bool if_not_exists) {
    const std::string& name = v.name.text;
    const int at = v.name.offset >= 0 ? v.name.offset : offset;
    if (find_table(name) != nullptr || find_view(name) != nullptr) {
      if (if_not_exists) return absl::OkStatus();
      return error(at, "view " + name + " is declared twice");
    }
    if (v.or_replace) return unsupported(at, "CREATE OR REPLACE VIEW");
    auto rows = query_planner().select(v.query, offset);
    if (!rows.ok()) return rows.status();
    absl::Status ranks = check_ranks(**rows, script_.text, offset);
    if (!ranks.ok()) return ranks;
    if (!v.columns.empty() && v.columns.size() != (*rows)->columns.size()) {
      return error(at, "view " + name + " names " + std::to_string(v.columns.size()) + " columns, its query has " +
                           std::to_string((*rows)->columns.size()));
    }
    views_[absl::AsciiStrToLower(name)] = v;
    return absl::OkStatus();
  }

  // ---- INSERT and SELECT ------------------------------------------------------

  absl::StatusOr<std::unique_ptr<PlanNode>> insert(const ast::Insert& b, int offset) {
    const std::string& name = b.table.text;
    const TableDef* sink = find_table(name);
    if (sink == nullptr) return error(b.table.offset >= 0 ? b.table.offset : offset, "no table " + name + " (declare it with CREATE TABLE)");
    if (b.has_columns) return unsupported(offset, "INSERT with a column list");
    QueryPlanner queries = query_planner();
    auto query = queries.select(b.query, offset);
    if (!query.ok()) return query.status();
    absl::Status ranks = check_ranks(**query, script_.text, offset);
    if (!ranks.ok()) return ranks;
    const auto& got = (*query)->columns;
    if (got.size() != sink->columns.size()) {
      return error(offset, "INSERT INTO " + name + ": the query has " + std::to_string(got.size()) +
                               " columns, the table " + std::to_string(sink->columns.size()));
    }
    for (size_t i = 0; i < got.size(); ++i) {
      if (!assignable(got[i].type, sink->columns[i].type)) {
        Type to = sink->columns[i].type, from = got[i].type;
        to.nullable = from.nullable = true;
        return error(offset, "INSERT INTO " + name + ": column " + sink->columns[i].name + " is " + to.to_string() +
                                 ", the query gives " + from.to_string() + " (" + got[i].name + ")");
      }
    }
    // A DECIMAL of another scale, or a number into a DECIMAL or from one
    // into a DOUBLE: converted as a CAST would, in a projection below the
    // sink.
    std::vector<Expr> converted;
    bool convert = false;
    for (size_t i = 0; i < got.size(); ++i) {
      Expr e = Expr::column_ref(static_cast<int>(i), got[i].type);
      const Type& to = sink->columns[i].type;
      if (got[i].type.kind == TypeKind::kDecimal || to.kind == TypeKind::kDecimal) {
        e = cast_to(std::move(e), to);
        convert = convert || e.kind != Expr::Kind::kColumn;
      }
      converted.push_back(std::move(e));
    }
    if (convert) {
      auto project = std::make_unique<PlanNode>();
      project->kind = PlanNode::Kind::kProject;
      for (size_t i = 0; i < got.size(); ++i) {
        project->columns.push_back({got[i].name, converted[i].type});
      }
      project->exprs = std::move(converted);
      project->input = *std::move(query);
      *query = std::move(project);
    }
    auto node = std::make_unique<PlanNode>();
    node->kind = PlanNode::Kind::kSink;
    node->table = sink->name;
    node->columns = sink->columns;
    node->input = *std::move(query);
    apply_rules(node->input, [this](const std::string& n) { return find_table(n); });
    return node;
  }

  std::string setting_hint(const std::string& key) const {
    static const std::vector<std::string> kKnown = {"table.optimizer.agg-phase-strategy", "table.exec.mini-batch.size",
                                                    "table.exec.mini-batch.allow-latency", "table.exec.mini-batch.enabled"};
    std::vector<std::string> all = kKnown;
    all.insert(all.end(), options_.job_setting_keys.begin(), options_.job_setting_keys.end());
    const std::string near = nearest(key, all);
    if (!near.empty()) return " (did you mean '" + near + "'?)";
    return " (known: " + absl::StrJoin(kKnown, ", ") + (options_.job_setting_keys.empty() ? "" : " and the job settings of docs/cli.md") + ")";
  }

  // SET 'key' = 'value' (Flink's keys; docs/sql.md).
  absl::Status setting(const std::string& name, const std::string& value, int at, Settings* settings) const {
    if (name == "table.optimizer.agg-phase-strategy") {
      const std::string v = absl::AsciiStrToUpper(value);
      if (v != "TWO_PHASE" && v != "ONE_PHASE" && v != "AUTO") {
        return error(at, "SET '" + name + "': '" + value + "' is none of TWO_PHASE, ONE_PHASE, AUTO");
      }
      settings->two_phase_aggregation = v == "TWO_PHASE";
    } else if (name == "table.exec.mini-batch.size") {
      if (!absl::SimpleAtoi(value, &settings->mini_batch_rows) || settings->mini_batch_rows < 1) {
        return error(at, "SET '" + name + "': '" + value + "' is no positive number");
      }
    } else if (name == "table.exec.mini-batch.allow-latency") {
      auto d = parse_duration(value);
      if (!d.ok() || d->count() < 1) return error(at, "SET '" + name + "': '" + value + "' is no duration ('100ms', '1s')");
      settings->mini_batch_latency_ms = d->count();
    } else if (name == "table.exec.mini-batch.enabled") {
      // weir's two-phase aggregation always gathers rows (by the size and
      // latency above): 'true' says what it does.
      if (!absl::EqualsIgnoreCase(value, "true")) {
        return error(at, "SET '" + name + "' = '" + value + "': weir's pre-aggregation always gathers mini-batches "
                         "(to aggregate in one phase: 'table.optimizer.agg-phase-strategy' = 'ONE_PHASE')");
      }
    } else if (absl::Status job = options_.job_setting ? options_.job_setting(name, value) : absl::NotFoundError(name);
               !absl::IsNotFound(job)) {
      if (!job.ok()) return error(at, "SET '" + name + "': " + std::string(job.message()));
      settings->job.emplace_back(name, value);
    } else {
      return error(at, "SET: unknown setting '" + name + "'" + setting_hint(name));
    }
    return absl::OkStatus();
  }

  // A bare SELECT into the result table (PlanOptions::result_table); its
  // ORDER BY (output columns by name or position) and LIMIT into `order`.
  absl::StatusOr<std::unique_ptr<PlanNode>> result_query(const ast::Select& b, int offset, ResultOrder* order) {
    ast::Select select = b;
    if (select.limit) {
      const ast::Expr& n = *select.limit;
      const bool constant = n.kind == ast::Expr::Kind::kLiteral &&
                            (n.literal.kind == ast::Literal::Kind::kInteger || n.literal.kind == ast::Literal::Kind::kNull);
      if (!constant) return unsupported(n.offset, "LIMIT of an expression");
      if (n.literal.kind == ast::Literal::Kind::kInteger) {  // LIMIT ALL: none
        order->limit = n.literal.integer;
        if (*order->limit < 0) return error(n.offset, "LIMIT must not be negative");
      }
      select.limit.reset();
    }
    const std::vector<ast::SortItem> sort = std::move(select.order_by);
    select.order_by.clear();
    QueryPlanner queries = query_planner();
    auto query = queries.select(select, offset);
    if (!query.ok()) return query.status();
    absl::Status ranks = check_ranks(**query, script_.text, offset);
    if (!ranks.ok()) return ranks;
    const std::vector<Column>& columns = (*query)->columns;
    for (const ast::SortItem& by : sort) {
      const ast::Expr& n = by.expr;
      const int at = n.offset;
      int column = -1;
      if (n.kind == ast::Expr::Kind::kColumn) {
        const std::vector<std::string>& names = n.names;
        if (names.size() == 1) column = column_index(columns, names[0]);
        if (column < 0) return error(at, "ORDER BY " + absl::StrJoin(names, ".") + ": not a column of the result");
      } else if (n.kind == ast::Expr::Kind::kLiteral && n.literal.kind == ast::Literal::Kind::kInteger) {
        const int64_t i = n.literal.integer;
        if (i < 1 || i > static_cast<int64_t>(columns.size())) {
          return error(at, "ORDER BY " + std::to_string(i) + ": the result has " + std::to_string(columns.size()) + " columns");
        }
        column = static_cast<int>(i - 1);
      } else {
        return unsupported(at, "ORDER BY an expression (a column of the result or its position is)");
      }
      if (by.nulls_order) return unsupported(at, "NULLS FIRST and NULLS LAST");
      order->keys.emplace_back(column, by.descending);
    }
    TableDef result;
    result.name = options_.result_table;
    result.offset = offset;
    result.columns = columns;
    result.options["connector"] = options_.result_connector;
    auto node = std::make_unique<PlanNode>();
    node->kind = PlanNode::Kind::kSink;
    node->table = result.name;
    node->columns = columns;
    node->input = *std::move(query);
    apply_rules(node->input, [this](const std::string& n) { return find_table(n); });
    tables_.push_back(std::move(result));
    return node;
  }

  const Script& script_;
  const PlanOptions options_;
  const Binder binder_;
  std::vector<TableDef> tables_;            // declared so far
  std::map<std::string, size_t> by_name_;  // lower-case name -> index into tables_
  std::map<std::string, ast::CreateView> views_;  // lower-case name -> its declaration
  std::vector<TemporalMark> temporal_;      // every FOR SYSTEM_TIME AS OF of the script
  std::vector<PartitionMark> partitions_;   // every SESSION ... PARTITION BY of the script
};

}  // namespace

absl::StatusOr<PlannedScript> plan_script(const Script& script, const PlanOptions& options) {
  return Planner(script, options).run();
}

std::string explain(const PlannedScript& planned) {
  std::string out;
  for (const InsertPlan& p : planned.inserts) {
    out += "== " + p.statement + "\n" + explain(*p.root);
  }
  return out;
}

}  // namespace weir::sql
