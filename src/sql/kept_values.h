// The values an aggregate keeps outside its AggregateState (sql/aggregate.h),
// in map state of the operator: DISTINCT values seen (FirstTime) and, over a
// changelog or a sliding frame, the rows per call and value (Kept). Internal
// to src/sql.
#ifndef WEIR_SQL_KEPT_VALUES_H_
#define WEIR_SQL_KEPT_VALUES_H_

#include <cstdint>
#include <string>

#include "sql/aggregate.h"
#include "weir/formats.h"
#include "weir/state.h"

namespace weir::sql {

// A group's distinct values, one map entry per value and set of calls with
// that argument, its bits the calls (up to 64) that saw it.
struct SeenValues final : Aggregates::FirstTime {
  MapState<std::string, int64_t>* values = nullptr;
  bool first_time(size_t call, size_t set, const Value& v) override {
    std::string key;
    ByteWriter out(&key);
    out.put_varint(set);
    Serializer<Value>::write(out, v);
    const int64_t bit = int64_t{1} << (call - set);
    const int64_t calls = values->get(key).value_or(0);
    if (calls & bit) return false;
    values->put(key, calls | bit);
    return true;
  }
};

// Per call and value the group's rows with it, one map entry each (the
// call's number, then the value).
struct KeptValues final : Aggregates::Kept {
  MapState<std::string, int64_t>* values = nullptr;
  int64_t change(size_t call, const Value& v, int64_t delta) override {
    std::string key;
    ByteWriter out(&key);
    out.put_varint(call);
    Serializer<Value>::write(out, v);
    const int64_t n = values->get(key).value_or(0) + delta;
    if (n > 0) {
      values->put(key, n);
    } else {
      values->remove(key);
    }
    return n;
  }
  Value extreme(size_t call, bool greatest) override {
    Value best;
    for (const auto& [key, n] : values->entries()) {
      ByteReader in(key);
      if (in.get_varint() != call) continue;
      Value v = Serializer<Value>::read(in);
      if (std::holds_alternative<std::monostate>(best) || (greatest ? best < v : v < best)) best = std::move(v);
    }
    return best;
  }
};

}  // namespace weir::sql

#endif  // WEIR_SQL_KEPT_VALUES_H_
