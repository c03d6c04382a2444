#include "sql/aggregate.h"

#include <algorithm>
#include <string>

#include "sql/decimal.h"
#include "sql/values.h"

namespace weir::sql {

Aggregates::Aggregates(std::vector<AggregateCall> calls) : calls_(std::move(calls)) {
  for (size_t i = 0; i < calls_.size(); ++i) {
    size_t set = i;
    for (size_t j = 0; j < i; ++j) {
      if (calls_[j].distinct && calls_[i].distinct && calls_[j].arg == calls_[i].arg) {
        set = distinct_set_[j];
        break;
      }
    }
    distinct_set_.push_back(set);
  }
}

AggregateState Aggregates::create() const {
  AggregateState s;
  s.values.resize(calls_.size());
  s.counts.assign(calls_.size(), 0);
  s.distinct.resize(calls_.size());
  for (size_t i = 0; i < calls_.size(); ++i) {
    if (calls_[i].kind == AggregateCall::Kind::kCount) s.values[i] = int64_t{0};
  }
  return s;
}

// Folds one non-NULL value into a running SUM, MIN or MAX (NULL: none yet).
absl::Status Aggregates::fold(const AggregateCall& call, Value& acc, const Value& v) const {
  if (is_null(acc)) {
    acc = v;
    return absl::OkStatus();
  }
  switch (call.kind) {
    case AggregateCall::Kind::kSum:
    case AggregateCall::Kind::kAvg:
      if (std::holds_alternative<double>(acc)) {
        std::get<double>(acc) += std::get<double>(v);
      } else if (__builtin_add_overflow(std::get<int64_t>(acc), std::get<int64_t>(v), &std::get<int64_t>(acc))) {
        return absl::OutOfRangeError(std::string(call.kind == AggregateCall::Kind::kSum ? "SUM" : "AVG") +
                                     " overflowed BIGINT");
      }
      return absl::OkStatus();
    case AggregateCall::Kind::kMin:
      if (v < acc) acc = v;
      return absl::OkStatus();
    case AggregateCall::Kind::kMax:
      if (acc < v) acc = v;
      return absl::OkStatus();
    case AggregateCall::Kind::kCount:
      break;
  }
  return absl::InternalError("fold of COUNT");
}

// Takes one value out of a running SUM or AVG.
absl::Status Aggregates::unfold(const AggregateCall& call, Value& acc, const Value& v) const {
  if (is_null(acc)) return absl::InternalError("a retraction from an empty SUM");
  if (std::holds_alternative<double>(acc)) {
    std::get<double>(acc) -= std::get<double>(v);
  } else if (__builtin_sub_overflow(std::get<int64_t>(acc), std::get<int64_t>(v), &std::get<int64_t>(acc))) {
    return absl::OutOfRangeError(std::string(call.kind == AggregateCall::Kind::kSum ? "SUM" : "AVG") +
                                 " overflowed BIGINT");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Value>> Aggregates::argument(const AggregateCall& c, const Row& row) const {
  if (c.filter) {
    auto keep = evaluate(*c.filter, row);
    if (!keep.ok()) return keep.status();
    if (!std::holds_alternative<bool>(*keep) || !std::get<bool>(*keep)) return std::nullopt;
  }
  if (!c.arg) return Value{};  // COUNT(*): the row
  auto v = evaluate(*c.arg, row);
  if (!v.ok()) return v.status();
  if (is_null(*v)) return std::nullopt;
  return *std::move(v);
}

absl::Status Aggregates::add(AggregateState& s, const Row& row, FirstTime* seen) const {
  ++s.rows;
  for (size_t i = 0; i < calls_.size(); ++i) {
    const AggregateCall& c = calls_[i];
    auto v = argument(c, row);
    if (!v.ok()) return v.status();
    if (!*v) continue;  // filtered out, or NULL
    if (!c.arg) {  // COUNT(*)
      ++std::get<int64_t>(s.values[i]);
      continue;
    }
    const Value& x = **v;
    if (c.distinct && seen == nullptr) {
      auto& set = s.distinct[i];
      auto at = std::lower_bound(set.begin(), set.end(), x);
      if (at == set.end() || *at != x) set.insert(at, x);
      continue;
    }
    // Kept outside: a value seen before changes nothing; a new one counts
    // as for the call without DISTINCT.
    if (c.distinct && !seen->first_time(i, distinct_set_[i], x)) continue;
    ++s.counts[i];
    if (c.kind == AggregateCall::Kind::kCount) {
      ++std::get<int64_t>(s.values[i]);
      continue;
    }
    absl::Status st = fold(c, s.values[i], x);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status Aggregates::update(AggregateState& s, const Row& row, int64_t delta, Kept& kept) const {
  return change(s, row, delta, &kept);
}

absl::Status Aggregates::update_partial(AggregateState& s, const Row& row, int64_t delta) const {
  return change(s, row, delta, nullptr);
}

absl::Status Aggregates::change(AggregateState& s, const Row& row, int64_t delta, Kept* kept) const {
  s.rows += delta;
  for (size_t i = 0; i < calls_.size(); ++i) {
    const AggregateCall& c = calls_[i];
    auto v = argument(c, row);
    if (!v.ok()) return v.status();
    if (!*v) continue;  // filtered out, or NULL
    if (!c.arg) {  // COUNT(*)
      std::get<int64_t>(s.values[i]) += delta;
      continue;
    }
    const Value& x = **v;
    const bool extreme = c.kind == AggregateCall::Kind::kMin || c.kind == AggregateCall::Kind::kMax;
    // A DISTINCT call sees a value's first row come and its last row go
    // (MIN and MAX are the same with DISTINCT).
    if (c.distinct && !extreme && kept->change(i, x, delta) != (delta > 0 ? 1 : 0)) continue;
    s.counts[i] += delta;
    absl::Status st;
    switch (c.kind) {
      case AggregateCall::Kind::kCount:
        std::get<int64_t>(s.values[i]) += delta;
        break;
      case AggregateCall::Kind::kSum:
      case AggregateCall::Kind::kAvg:
        if (kept == nullptr && delta < 0 && is_null(s.values[i])) {  // a partial's retraction first
          s.values[i] = std::holds_alternative<double>(x) ? Value{0.0} : Value{int64_t{0}};
        }
        st = delta > 0 ? fold(c, s.values[i], x) : unfold(c, s.values[i], x);
        // Over no rows: NULL. (A partial's count may come to 0 with a sum
        // left: one value retracted, another added.)
        if (kept != nullptr && s.counts[i] == 0) s.values[i] = Value{};
        break;
      case AggregateCall::Kind::kMin:
      case AggregateCall::Kind::kMax: {
        if (kept == nullptr) return absl::InternalError("a partial of MIN or MAX over retractions");
        const int64_t left = kept->change(i, x, delta);
        if (delta > 0) {
          st = fold(c, s.values[i], x);
        } else if (left == 0 && s.values[i] == x) {  // the extreme went: the next among those kept
          s.values[i] = kept->extreme(i, c.kind == AggregateCall::Kind::kMax);
        }
        break;
      }
    }
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status Aggregates::merge(AggregateState& into, const AggregateState& other, bool partial) const {
  into.rows += other.rows;
  for (size_t i = 0; i < calls_.size(); ++i) {
    const AggregateCall& c = calls_[i];
    if (c.distinct) {
      std::vector<Value> both;
      std::set_union(into.distinct[i].begin(), into.distinct[i].end(), other.distinct[i].begin(),
                     other.distinct[i].end(), std::back_inserter(both));
      into.distinct[i] = std::move(both);
      continue;
    }
    into.counts[i] += other.counts[i];
    if (c.kind == AggregateCall::Kind::kCount) {
      std::get<int64_t>(into.values[i]) += std::get<int64_t>(other.values[i]);
      continue;
    }
    if (is_null(other.values[i])) continue;
    absl::Status st = fold(c, into.values[i], other.values[i]);
    if (!st.ok()) return st;
    if (!partial && into.counts[i] == 0) into.values[i] = Value{};  // a partial took the last values out
  }
  return absl::OkStatus();
}

bool Aggregates::merges_retractions() const {
  return std::all_of(calls_.begin(), calls_.end(), [](const AggregateCall& c) {
    return !c.distinct && (c.kind == AggregateCall::Kind::kCount || c.kind == AggregateCall::Kind::kSum ||
                           c.kind == AggregateCall::Kind::kAvg);
  });
}

absl::Status Aggregates::results(const AggregateState& s, std::vector<Value>* out) const {
  for (size_t i = 0; i < calls_.size(); ++i) {
    const AggregateCall& c = calls_[i];
    Value value = s.values[i];
    int64_t count = s.counts[i];
    if (c.distinct && !s.distinct[i].empty()) {  // the same calls over the distinct values kept here
      const auto& set = s.distinct[i];
      count = static_cast<int64_t>(set.size());
      value = c.kind == AggregateCall::Kind::kCount ? Value{count} : Value{};
      if (c.kind != AggregateCall::Kind::kCount) {
        for (const Value& v : set) {
          absl::Status st = fold(c, value, v);
          if (!st.ok()) return st;
        }
      }
    }
    if (c.kind == AggregateCall::Kind::kAvg && !is_null(value)) {
      if (std::holds_alternative<double>(value)) {
        value = std::get<double>(value) / static_cast<double>(count);
      } else if (c.type.kind == TypeKind::kDecimal) {
        auto avg = decimal_divide(std::get<int64_t>(value), c.arg->type.scale, count, 0, c.type.scale);
        if (!avg.ok()) return avg.status();
        value = *avg;
      } else {
        value = std::get<int64_t>(value) / count;
      }
    }
    out->push_back(std::move(value));
  }
  return absl::OkStatus();
}

}  // namespace weir::sql
