// The accumulators of a GROUP BY's aggregate calls (sql/plan.h,
// AggregateCall): one AggregateState per group holds every call's running
// value; states merge (session windows, sliced hopping windows) and give
// the calls' results in order.
//
// A call with FILTER (WHERE c) sees only the rows where c is true.
// COUNT counts rows (COUNT(*)) or non-NULL arguments; SUM, MIN, MAX and AVG
// skip NULLs and are NULL over none. A DISTINCT call keeps the set of its
// distinct non-NULL arguments (memory grows with it) and computes its result
// from the set. A BIGINT SUM that overflows is an error naming the call.
//
// Aggregates is immutable and thread-safe; an AggregateState belongs to one
// group.
#ifndef WEIR_SQL_AGGREGATE_H_
#define WEIR_SQL_AGGREGATE_H_

#include <cstdint>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "sql/plan.h"
#include "weir/formats.h"

namespace weir::sql {

struct AggregateState {
  std::vector<Value> values;                 // per call: COUNT's count; SUM's and AVG's sum; MIN's, MAX's value
  std::vector<int64_t> counts;               // per call: the non-NULL arguments added (AVG divides by it)
  std::vector<std::vector<Value>> distinct;  // per call: DISTINCT's values seen, sorted (else empty;
                                             // empty too when the operator keeps them, see FirstTime)
  auto weir_fields() { return std::tie(values, counts, distinct); }
};

class Aggregates {
 public:
  explicit Aggregates(std::vector<AggregateCall> calls);

  // Says whether DISTINCT call `call` sees `value` for the first time in
  // the group (and remembers it): distinct values kept outside the state,
  // in keyed state of the operator, which the AggregateState then does not
  // hold. Calls whose arguments are the same expression share `set`.
  struct FirstTime {
    virtual ~FirstTime() = default;
    virtual bool first_time(size_t call, size_t set, const Value& value) = 0;
  };

  AggregateState create() const;
  // Adds `row` (the rows the calls' arguments read) to `state`; DISTINCT
  // calls ask `seen` when given, else keep their sets in `state`.
  absl::Status add(AggregateState& state, const Row& row, FirstTime* seen = nullptr) const;
  // The set of DISTINCT call `call` (calls of one argument share one).
  size_t distinct_set(size_t call) const { return distinct_set_[call]; }
  // `into` becomes the state of both groups' rows (sets in the states).
  absl::Status merge(AggregateState& into, const AggregateState& other) const;
  // Appends each call's result to `out`.
  absl::Status results(const AggregateState& state, std::vector<Value>* out) const;

 private:
  absl::Status fold(const AggregateCall& call, Value& acc, const Value& v) const;

  std::vector<AggregateCall> calls_;
  std::vector<size_t> distinct_set_;
};

}  // namespace weir::sql

#endif  // WEIR_SQL_AGGREGATE_H_
