#include "sql/program.h"

namespace weir::sql {

Program::Program(std::vector<Expr> exprs) : exprs_(std::move(exprs)) {
  for (const Expr& e : exprs_) roots_.push_back(add(e));
}

Program::Operand Program::add(const Expr& e) {
  if (e.kind == Expr::Kind::kColumn) return {Operand::Kind::kColumn, e.column};
  if (e.kind == Expr::Kind::kLiteral) {
    for (size_t i = 0; i < literals_.size(); ++i) {
      if (*literals_[i] == e.literal) return {Operand::Kind::kLiteral, static_cast<int>(i)};
    }
    literals_.push_back(&e.literal);
    return {Operand::Kind::kLiteral, static_cast<int>(literals_.size() - 1)};
  }
  std::vector<Operand> operands;
  operands.reserve(e.args.size());
  for (const Expr& a : e.args) operands.push_back(add(a));
  // The same call of the same operands is the same value. (Literals are
  // shared by value: a literal's type follows from its value within the
  // one call, which also compares result types.)
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Expr& c = *steps_[i].call;
    if (c.op == e.op && c.type == e.type && c.has_else == e.has_else && steps_[i].operands == operands &&
        std::equal(c.args.begin(), c.args.end(), e.args.begin(), e.args.end(),
                   [](const Expr& x, const Expr& y) { return x.type == y.type; })) {
      return {Operand::Kind::kStep, static_cast<int>(i)};
    }
  }
  steps_.push_back({&e, std::move(operands)});
  return {Operand::Kind::kStep, static_cast<int>(steps_.size() - 1)};
}

Program::Run::Run(std::shared_ptr<const Program> program)
    : program_(std::move(program)), slots_(program_->steps_.size()), done_(program_->steps_.size(), 0) {}

absl::StatusOr<const Value*> Program::Run::operand(Operand o) {
  switch (o.kind) {
    case Operand::Kind::kColumn: return &row_->values[static_cast<size_t>(o.index)];
    case Operand::Kind::kLiteral: return program_->literals_[static_cast<size_t>(o.index)];
    case Operand::Kind::kStep: break;
  }
  const size_t i = static_cast<size_t>(o.index);
  if (done_[i] != generation_) {
    const Step& step = program_->steps_[i];
    auto v = evaluate_call(*step.call, [&](size_t k) { return operand(step.operands[k]); });
    if (!v.ok()) return v.status();
    slots_[i] = *std::move(v);
    done_[i] = generation_;
  }
  return &slots_[i];
}

}  // namespace weir::sql
