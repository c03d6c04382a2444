// Expressions over rows of one input compiled for evaluation row after row:
// a WHERE condition and a SELECT list as one operator evaluates them.
//
// Each distinct subexpression of all of them is one step, evaluated at most
// once per row and only when first needed: `REGEXP_EXTRACT(url, ...)` in
// the WHERE and the SELECT list, or `HOUR(date_time)` in four branches of a
// CASE, costs one evaluation. A step not needed (a CASE branch not taken, the
// rest of an AND after FALSE) is not evaluated, so a shared step fails a row
// only where evaluating the expressions one by one would. Column values and
// literals are read where they are, not copied.
//
//   auto program = std::make_shared<const Program>(exprs);
//   Program::Run run(program);     // one per evaluating thread
//   run.start(row);
//   absl::StatusOr<const Value*> v = run.value(0);  // valid until start()
//
// A Program is immutable and shared; a Run is the per-row working space of
// one thread.
#ifndef WEIR_SQL_PROGRAM_H_
#define WEIR_SQL_PROGRAM_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "sql/expression.h"

namespace weir::sql {

class Program {
  // Where a value comes from: the row's column, a literal, a step.
  struct Operand {
    enum class Kind : uint8_t { kColumn, kLiteral, kStep };
    Kind kind = Kind::kColumn;
    int index = 0;
    bool operator==(const Operand&) const = default;
  };
  // `x IN (v1, ..., vn)` (an OR of x = vi) or `x NOT IN (...)` (an AND of
  // x <> vi) over literals of x's type: the values as a hash set, probed
  // once per row instead of n comparisons (SQL's NULLs kept: a NULL x, or
  // no match with a NULL among the values, is NULL).
  struct InSet {
    Operand probe;  // x
    bool negated = false;
    bool has_null = false;
    std::unordered_set<Value> values;
  };
  struct Step {
    const Expr* call;  // into exprs_: its op, type and operands' types
    std::vector<Operand> operands;
    std::shared_ptr<const InSet> in_set;  // set for an IN list (above)
  };

 public:
  explicit Program(std::vector<Expr> exprs);
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  size_t size() const { return roots_.size(); }
  const Expr& expr(size_t i) const { return exprs_[i]; }
  // How many calls are evaluated per row at most (for tests and plans).
  size_t steps() const { return steps_.size(); }
  // How many IN lists probe a set (for tests).
  size_t in_sets() const {
    return static_cast<size_t>(std::count_if(steps_.begin(), steps_.end(), [](const Step& s) { return s.in_set != nullptr; }));
  }

  class Run {
   public:
    explicit Run(std::shared_ptr<const Program> program);
    Run(const Run& other) : Run(other.program_) {}  // a fresh working space

    // The row the next value() calls read (kept by reference).
    void start(const Row& row) {
      row_ = &row;
      if (++generation_ == 0) {  // wrapped: no slot may look computed
        std::fill(done_.begin(), done_.end(), 0);
        generation_ = 1;
      }
    }
    // The value of expression `i` for the row; valid until start().
    absl::StatusOr<const Value*> value(size_t i) { return operand(program_->roots_[i]); }

   private:
    absl::StatusOr<const Value*> operand(Operand o);

    std::shared_ptr<const Program> program_;
    const Row* row_ = nullptr;
    std::vector<Value> slots_;
    std::vector<uint32_t> done_;  // slot i holds this row's value when done_[i] == generation_
    uint32_t generation_ = 0;
  };

 private:
  // The operand `e` is: a column, a literal, or a step (added if new).
  Operand add(const Expr& e);
  // The IN list `e` (with its operands) is, or null.
  std::shared_ptr<const InSet> in_set(const Expr& e, const std::vector<Operand>& operands) const;

  std::vector<Expr> exprs_;
  std::vector<const Value*> literals_;  // into exprs_
  std::vector<Step> steps_;             // operands before the steps using them
  std::vector<Operand> roots_;
  // Candidates for sharing, by hash (of the value; of the op and the
  // operands): building is linear in the expressions' size.
  std::unordered_multimap<size_t, int> literal_index_;
  std::unordered_multimap<size_t, int> step_index_;
};

}  // namespace weir::sql

#endif  // WEIR_SQL_PROGRAM_H_
