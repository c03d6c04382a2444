#include "sql/program.h"

namespace weir::sql {

Program::Program(std::vector<Expr> exprs) : exprs_(std::move(exprs)) {
  for (const Expr& e : exprs_) roots_.push_back(add(e));
}

namespace {

size_t combine(size_t seed, size_t h) { return seed ^ (h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); }

}  // namespace

Program::Operand Program::add(const Expr& e) {
  if (e.kind == Expr::Kind::kColumn) return {Operand::Kind::kColumn, e.column};
  if (e.kind == Expr::Kind::kLiteral) {
    const size_t h = std::hash<Value>{}(e.literal);
    auto [from, to] = literal_index_.equal_range(h);
    for (auto it = from; it != to; ++it) {
      if (*literals_[static_cast<size_t>(it->second)] == e.literal) return {Operand::Kind::kLiteral, it->second};
    }
    literals_.push_back(&e.literal);
    const int index = static_cast<int>(literals_.size() - 1);
    literal_index_.emplace(h, index);
    return {Operand::Kind::kLiteral, index};
  }
  std::vector<Operand> operands;
  operands.reserve(e.args.size());
  for (const Expr& a : e.args) operands.push_back(add(a));
  // The same call of the same operands is the same value. (Literals are
  // shared by value: a literal's type follows from its value within the
  // one call, which also compares result types.)
  size_t h = combine(static_cast<size_t>(e.op), static_cast<size_t>(e.type.kind));
  for (const Operand& o : operands) h = combine(combine(h, static_cast<size_t>(o.kind)), static_cast<size_t>(o.index));
  auto [from, to] = step_index_.equal_range(h);
  for (auto it = from; it != to; ++it) {
    const Step& step = steps_[static_cast<size_t>(it->second)];
    const Expr& c = *step.call;
    if (c.op == e.op && c.type == e.type && c.has_else == e.has_else && step.operands == operands &&
        std::equal(c.args.begin(), c.args.end(), e.args.begin(), e.args.end(),
                   [](const Expr& x, const Expr& y) { return x.type == y.type; })) {
      return {Operand::Kind::kStep, it->second};
    }
  }
  std::shared_ptr<const InSet> set = in_set(e, operands);
  steps_.push_back({&e, std::move(operands), std::move(set)});
  const int index = static_cast<int>(steps_.size() - 1);
  step_index_.emplace(h, index);
  return {Operand::Kind::kStep, index};
}

std::shared_ptr<const Program::InSet> Program::in_set(const Expr& e, const std::vector<Operand>& operands) const {
  constexpr size_t kMinValues = 8;  // fewer: the comparisons are as quick
  if (e.kind != Expr::Kind::kCall || (e.op != Op::kOr && e.op != Op::kAnd) || e.args.size() < kMinValues) {
    return nullptr;
  }
  const Op compare = e.op == Op::kOr ? Op::kEqual : Op::kNotEqual;
  auto set = std::make_shared<InSet>();
  set->negated = e.op == Op::kAnd;
  for (size_t k = 0; k < e.args.size(); ++k) {
    const Expr& c = e.args[k];
    if (c.kind != Expr::Kind::kCall || c.op != compare || c.args.size() != 2 ||
        c.args[1].kind != Expr::Kind::kLiteral || operands[k].kind != Operand::Kind::kStep) {
      return nullptr;
    }
    const Type& x = c.args[0].type;
    const Type& v = c.args[1].type;
    // Values of x's own type (a DECIMAL of its scale): equal as SQL
    // compares them exactly when equal as values.
    const bool same_type = v.kind == TypeKind::kNull || (v.kind == x.kind && v.scale == x.scale);
    if (!same_type || x.kind == TypeKind::kDouble) return nullptr;
    const Operand probe = steps_[static_cast<size_t>(operands[k].index)].operands[0];
    if (k == 0) set->probe = probe;
    if (!(probe == set->probe)) return nullptr;
    if (std::holds_alternative<std::monostate>(c.args[1].literal)) {
      set->has_null = true;
    } else {
      set->values.insert(c.args[1].literal);
    }
  }
  return set;
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
    if (step.in_set != nullptr) {
      const InSet& in = *step.in_set;
      auto x = operand(in.probe);
      if (!x.ok()) return x.status();
      if (std::holds_alternative<std::monostate>(**x)) {
        slots_[i] = Value{};
      } else if (in.values.count(**x) != 0) {
        slots_[i] = !in.negated;
      } else {
        slots_[i] = in.has_null ? Value{} : Value{in.negated};
      }
      done_[i] = generation_;
      return &slots_[i];
    }
    auto v = evaluate_call(*step.call, [&](size_t k) { return operand(step.operands[k]); });
    if (!v.ok()) return v.status();
    slots_[i] = *std::move(v);
    done_[i] = generation_;
  }
  return &slots_[i];
}

}  // namespace weir::sql
