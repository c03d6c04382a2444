// WHERE and SELECT over rows of one input: one operator, its expressions
// one sql::Program (each common subexpression once per row).
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
  bool passes(const Row& row) {
    run_.start(row);
    for (size_t i = 0; i < conditions_; ++i) {
      const Value& v = value(i);
      if (!std::holds_alternative<bool>(v) || !std::get<bool>(v)) return false;
    }
    return true;
  }

  // The selected row of the row passes() was last asked about.
  Row select(RowKind kind, size_t size) {
    Row r;
    r.kind = kind;
    r.values.reserve(size);
    for (size_t i = conditions_; i < conditions_ + size; ++i) r.values.push_back(value(i));
    return r;
  }

 private:
  const Value& value(size_t i) {
    auto v = run_.value(i);
    // The same row fails the same way after a restart: the job fails.
    if (!v.ok()) throw UnrecoverableError((*where_)[i] + ": " + std::string(v.status().message()));
    return **v;
  }

  Program::Run run_;
  size_t conditions_;
  std::shared_ptr<const std::vector<std::string>> where_;
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
  Calc fn(std::make_shared<const Program>(std::move(exprs)), conditions.size(), std::move(where));
  if (select == nullptr) {
    DataStream<Row> out = in.filter([fn](const Row& row) mutable { return fn.passes(row); }, "filter");
    out.uid(uid + "filter");
    return out;
  }
  const size_t size = select->size();
  DataStream<Row> out = in.flat_map<Row>(
      [fn, size](const Row& row, Collector<Row>& out) mutable {
        if (fn.passes(row)) out.collect(fn.select(row.kind, size));
      },
      conditions.empty() ? "project" : "calc");
  out.uid(uid + (conditions.empty() ? "project" : "calc"));
  return out;
}

}  // namespace weir::sql
