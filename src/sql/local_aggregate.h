// The local phase of a two-phase GROUP BY (sql/operators.h
// two_phase_aggregate), internal to src/sql: before the exchange by key,
// each subtask folds its rows into one partial state per group and emits
// the partials, so the exchange carries a row per group and mini-batch
// instead of a row per input row.
#ifndef WEIR_SQL_LOCAL_AGGREGATE_H_
#define WEIR_SQL_LOCAL_AGGREGATE_H_

#include <memory>
#include <string>

#include "sql/aggregate.h"
#include "sql/keys.h"
#include "sql/planner.h"
#include "weir/stream.h"

namespace weir::sql {

// The partials of `in` (inserts only, or with `changelog` a changelog
// whose calls merge retractions, Aggregates::merges_retractions): rows
// {the group's key as KeyEncoder::encode gives it, its partial
// AggregateState serialized}; a changelog's partial holds its additions
// less its retractions.
// They leave when `settings.mini_batch_rows` rows came since the last
// partials left, when `settings.mini_batch_latency_ms` passed since the
// first of them, before every watermark and at the end of input. Partials
// not yet left are operator state: a checkpoint keeps them (a restore at
// another parallelism spreads them over the subtasks, which is harmless:
// the global phase merges whatever partials a group gets).
DataStream<Row> local_aggregate(const DataStream<Row>& in, std::shared_ptr<const KeyEncoder> keys,
                                std::shared_ptr<const Aggregates> aggregates, bool changelog,
                                const Settings& settings, const std::string& uid);

// The partial state of a row local_aggregate emitted.
AggregateState partial_state(const Row& row);

}  // namespace weir::sql

#endif  // WEIR_SQL_LOCAL_AGGREGATE_H_
