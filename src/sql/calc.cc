// WHERE and SELECT over rows of one input: one operator, its expressions
// one sql::Program (each common subexpression once per row).
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "sql/operators.h"
#include "sql/program.h"

namespace weir::sql {
namespace {

// Per operator instance: the program's working space (copied fresh).
class Calc {
 public:
  // The program's expressions: the conditions, then the selected ones.
  Calc(std::shared_ptr<const Program> program, size_t conditions, std::shared_ptr<const std::vector<std::string>> where)
      : run_(std::move(program)), conditions_(conditions), where_(std::move(where)) {}

  // Whether `row` passes every condition, in order (true without one).
  // These three are inlined into each operator's per-row call (two
  // operators use them: left to itself the compiler calls value()).
  [[gnu::always_inline]] bool passes(const Row& row) {
    run_.start(row);
    for (size_t i = 0; i < conditions_; ++i) {
      const Value& v = value(i);
      if (!std::holds_alternative<bool>(v) || !std::get<bool>(v)) return false;
    }
    return true;
  }

  // The selected row of the row passes() was last asked about.
  [[gnu::always_inline]] Row select(RowKind kind, size_t size) {
    Row r;
    r.kind = kind;
    r.values.reserve(size);
    for (size_t i = conditions_; i < conditions_ + size; ++i) r.values.push_back(value(i));
    return r;
  }

 private:
  [[gnu::always_inline]] const Value& value(size_t i) {
    auto v = run_.value(i);
    // The same row fails the same way after a restart: the job fails.
    if (!v.ok()) throw UnrecoverableError((*where_)[i] + ": " + std::string(v.status().message()));
    return **v;
  }

  Program::Run run_;
  size_t conditions_;
  std::shared_ptr<const std::vector<std::string>> where_;
};

// A Calc whose expressions read CURRENT_WATERMARK: an operator that keeps
// its input's watermark and evaluates each row under it.
class WatermarkCalc final : public detail::OneOutputOperator<Row>, public detail::Input<Row> {
 public:
  WatermarkCalc(Calc fn, std::optional<size_t> size) : fn_(std::move(fn)), size_(size) {}
  void* input() override { return static_cast<detail::Input<Row>*>(this); }
  void process(const Row& row) override {
    std::optional<Row> result;
    {
      WatermarkScope scope(&watermark_);  // only while this row is computed, not downstream
      if (fn_.passes(row)) result = size_ ? fn_.select(row.kind, *size_) : row;
    }
    if (result) this->out_->collect(*std::move(result));
  }
  void process_watermark(int64_t watermark) override {
    watermark_ = watermark;
    OneOutputOperator<Row>::process_watermark(watermark);
  }

 private:
  Calc fn_;
  std::optional<size_t> size_;  // none: no SELECT list, the row as it is
  int64_t watermark_ = INT64_MIN;
};

}  // namespace

DataStream<Row> calc(const DataStream<Row>& in, const std::vector<Expr>& conditions, const std::vector<Expr>* select,
                     const std::vector<std::string>& input_names, const std::string& uid) {
  std::vector<Expr> exprs;
  auto where = std::make_shared<std::vector<std::string>>();
  for (const Expr& c : conditions) {
    exprs.push_back(c);
    where->push_back("WHERE " + c.to_string(input_names));
  }
  if (select != nullptr) {
    for (const Expr& e : *select) {
      exprs.push_back(e);
      where->push_back("SELECT " + e.to_string(input_names));
    }
  }
  const bool watermark = std::any_of(exprs.begin(), exprs.end(), [](const Expr& e) { return reads_watermark(e); });
  Calc fn(std::make_shared<const Program>(std::move(exprs)), conditions.size(), std::move(where));
  const std::string name = calc_name(conditions, select, input_names);
  const std::string kind = select == nullptr ? "filter" : conditions.empty() ? "project" : "calc";  // in the uid
  if (watermark) {
    const std::optional<size_t> size = select != nullptr ? std::optional<size_t>(select->size()) : std::nullopt;
    DataStream<Row> out = detail::GraphBuilder::add<Row>(in, name, [fn, size]() { return std::make_unique<WatermarkCalc>(fn, size); });
    out.uid(uid + kind);
    return out;
  }
  if (select == nullptr) {
    DataStream<Row> out = in.filter([fn](const Row& row) mutable { return fn.passes(row); }, name);
    out.uid(uid + kind);
    return out;
  }
  const size_t size = select->size();
  DataStream<Row> out = in.flat_map<Row>(
      [fn, size](const Row& row, Collector<Row>& out) mutable {
        if (fn.passes(row)) out.collect(fn.select(row.kind, size));
      },
      name);
  out.uid(uid + kind);
  return out;
}

DataStream<Row> unnest(const DataStream<Row>& in, const PlanNode& n, const std::vector<std::string>& input_names,
                       const std::string& uid) {
  const Expr collection = n.exprs[0];
  const bool is_map = collection.type.kind == TypeKind::kMap, ordinality = n.ordinality, outer = n.unnest_outer;
  const size_t added = n.columns.size() - n.input->columns.size();
  const std::string where = "UNNEST(" + collection.to_string(input_names) + ")";
  DataStream<Row> out = in.flat_map<Row>(
      [=](const Row& row, Collector<Row>& out) {
        absl::StatusOr<Value> v = evaluate(collection, row);
        if (!v.ok()) throw UnrecoverableError(where + ": " + std::string(v.status().message()));
        std::vector<Value> flat;  // an ARRAY's elements; a MAP's keys and values in turn
        if (const auto* bytes = std::get_if<std::string>(&*v)) flat = decode_elements(*bytes);
        const size_t step = is_map ? 2 : 1;
        auto emit = [&](const Value* element, int64_t position) {
          Row r;
          r.kind = row.kind;
          r.values.reserve(row.values.size() + added);
          r.values = row.values;
          for (size_t k = 0; k < step; ++k) r.values.push_back(element != nullptr ? element[k] : Value{});
          if (ordinality) r.values.push_back(element != nullptr ? Value{position} : Value{});
          out.collect(std::move(r));
        };
        for (size_t i = 0; i + step <= flat.size(); i += step) emit(&flat[i], static_cast<int64_t>(i / step + 1));
        if (flat.empty() && outer) emit(nullptr, 0);
      },
      outer ? "left-unnest" : "unnest");
  out.uid(uid + "unnest");
  return out;
}

}  // namespace weir::sql
