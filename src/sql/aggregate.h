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
// Over a changelog (an updating input) rows are added and retracted
// (update()): COUNT, SUM and AVG take a retracted row's value out again;
// MIN and MAX, and DISTINCT calls, count each value's rows in keyed state of
// the operator (Kept), and a retracted minimum or maximum is found again
// among the values kept. `rows` counts the group's rows: at 0 the group is
// gone.
//
// Aggregates is immutable and thread-safe; an AggregateState belongs to one
// group.
#ifndef WEIR_SQL_AGGREGATE_H_
#define WEIR_SQL_AGGREGATE_H_

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sql/plan.h"
#include "weir/formats.h"

namespace weir::sql {

struct AggregateState {
  std::vector<Value> values;                 // per call: COUNT's count; SUM's and AVG's sum; MIN's, MAX's value
  std::vector<int64_t> counts;               // per call: the non-NULL arguments added (AVG divides by it)
  std::vector<std::vector<Value>> distinct;  // per call: DISTINCT's values seen, sorted (else empty;
                                             // empty too when the operator keeps them, see FirstTime)
  int64_t rows = 0;                          // rows added less rows retracted
  auto weir_fields() { return std::tie(values, counts, distinct, rows); }
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

  // A changelog's values kept outside the state, in keyed state of the
  // operator: per call and value, the number of the group's rows that gave
  // the call that value (MIN, MAX and DISTINCT calls).
  struct Kept {
    virtual ~Kept() = default;
    // Changes the count of `value` for call `call` by `delta` (+1, -1);
    // returns the count after.
    virtual int64_t change(size_t call, const Value& value, int64_t delta) = 0;
    // The greatest (else least) value of call `call` with rows, or NULL.
    virtual Value extreme(size_t call, bool greatest) = 0;
  };

  AggregateState create() const;
  // Adds `row` (the rows the calls' arguments read) to `state`; DISTINCT
  // calls ask `seen` when given, else keep their sets in `state`.
  absl::Status add(AggregateState& state, const Row& row, FirstTime* seen = nullptr) const;
  // Adds (`delta` 1) or retracts (`delta` -1) `row` of a changelog.
  absl::Status update(AggregateState& state, const Row& row, int64_t delta, Kept& kept) const;
  // The same into a partial state (local_aggregate's; only where
  // merges_retractions()): what the rows add less what they retract, so a
  // retraction may come first (a SUM then starts from zero) and a count
  // may be negative or 0 beside a sum that is not.
  absl::Status update_partial(AggregateState& state, const Row& row, int64_t delta) const;
  // The set of DISTINCT call `call` (calls of one argument share one).
  size_t distinct_set(size_t call) const { return distinct_set_[call]; }
  // `into` becomes the state of both groups' rows (sets in the states).
  // `other` may be a partial of a changelog (update_partial): then a SUM or
  // AVG whose count comes to 0 is NULL again, unless `into` is a partial
  // too (`partial`).
  absl::Status merge(AggregateState& into, const AggregateState& other, bool partial = false) const;
  // Whether partial states of a changelog's rows (local_aggregate's, made
  // by update() with no Kept values) merge into a group's state: every call
  // is COUNT, SUM or AVG without DISTINCT. MIN, MAX and DISTINCT calls over
  // a changelog count each value's rows in the operator's keyed state,
  // which a partial has not.
  bool merges_retractions() const;
  // Appends each call's result to `out`.
  absl::Status results(const AggregateState& state, std::vector<Value>* out) const;

 private:
  // update() with `kept`, update_partial() without.
  absl::Status change(AggregateState& state, const Row& row, int64_t delta, Kept* kept) const;
  absl::Status fold(const AggregateCall& call, Value& acc, const Value& v) const;
  absl::Status unfold(const AggregateCall& call, Value& acc, const Value& v) const;
  // The value call `call` takes from `row`: nullopt if its FILTER rejects
  // the row or its argument is NULL; for COUNT(*) a NULL (the row itself).
  absl::StatusOr<std::optional<Value>> argument(const AggregateCall& call, const Row& row) const;

  std::vector<AggregateCall> calls_;
  std::vector<size_t> distinct_set_;
};

}  // namespace weir::sql

#endif  // WEIR_SQL_AGGREGATE_H_
