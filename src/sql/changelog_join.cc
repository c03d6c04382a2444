// The regular join that takes changes back (sql/operators.h changelog_join):
// of an updating input, and every outer join. Flink's streaming join keeps
// the same: per key each side's rows with how many of each there are, and
// for an outer side how many partners each has, so its NULL-padded row can
// be taken back when the first partner comes and given again when the last
// one goes.
#include <cstdint>
#include <tuple>

#include "sql/keys.h"
#include "sql/operators.h"

namespace weir::sql {
namespace {

// A distinct row of one side, for one key.
struct Kept {
  int64_t count = 0;     // how many equal rows are there
  int64_t partners = 0;  // an outer side's: the other side's rows it joins
  auto weir_fields() { return std::tie(count, partners); }
};

class ChangelogJoinRows final : public KeyedCoProcessFunction<std::string, Row, Row, Row> {
 public:
  ChangelogJoinRows(std::optional<Expr> condition, std::string where, bool left_outer, bool right_outer,
                    size_t left_width, size_t right_width)
      : condition_(std::move(condition)), where_(std::move(where)), left_outer_(left_outer),
        right_outer_(right_outer), left_nulls_(null_row(left_width)), right_nulls_(null_row(right_width)) {}

  absl::Status open(KeyedRuntimeContext<std::string>& ctx) override {
    left_ = &ctx.get_map_state(MapStateDescriptor<std::string, Kept>{"left"});
    right_ = &ctx.get_map_state(MapStateDescriptor<std::string, Kept>{"right"});
    return absl::OkStatus();
  }
  void process_element1(const Row& row, Context& ctx, Collector<Row>& out) override {
    process(row, true, ctx, out);
  }
  void process_element2(const Row& row, Context& ctx, Collector<Row>& out) override {
    process(row, false, ctx, out);
  }

 private:
  static Row null_row(size_t width) {
    Row r;
    r.values.resize(width);
    return r;
  }
  static bool adds(const Row& row) { return row.kind == RowKind::kInsert || row.kind == RowKind::kUpdateAfter; }

  // `row` of the left side (`from_left`) or the right.
  void process(const Row& row, bool from_left, Context& ctx, Collector<Row>& out) {
    const bool mine_outer = from_left ? left_outer_ : right_outer_;
    const bool other_outer = from_left ? right_outer_ : left_outer_;
    const Row& other_nulls = from_left ? right_nulls_ : left_nulls_;
    auto pair = [&](const Row& mine, const Row& other, RowKind kind) {
      return from_left ? joined_row(mine, other, kind) : joined_row(other, mine, kind);
    };
    const RowKind padded_kind = adds(row) ? RowKind::kInsert : RowKind::kDelete;
    // A NULL key equals nothing: an outer row stays padded, unkept.
    if (KeyEncoder::join_key_has_null(ctx.current_key())) {
      if (mine_outer) out.collect(pair(row, other_nulls, padded_kind));
      return;
    }
    MapState<std::string, Kept>* mine = from_left ? left_ : right_;
    MapState<std::string, Kept>* others = from_left ? right_ : left_;
    const std::string key = encode_values(row);
    Kept kept = mine->get(key).value_or(Kept{});
    if (!adds(row) && kept.count == 0) return;  // a retraction of a row never here (or expired)
    int64_t partners = 0;
    for (auto& [encoded, other] : others->entries()) {
      const Row o = decode_values(encoded);
      if (!matches(from_left ? row : o, from_left ? o : row)) continue;
      partners += other.count;
      if (other_outer) {
        // The other row's padded form goes with its first partner and
        // comes back when its last one leaves.
        const bool first = adds(row) && other.partners == 0;
        other.partners += adds(row) ? 1 : -1;
        const bool last = !adds(row) && other.partners == 0;
        if (first || last) {
          for (int64_t i = 0; i < other.count; ++i) {
            out.collect(from_left ? joined_row(left_nulls_, o, first ? RowKind::kDelete : RowKind::kInsert)
                                  : joined_row(o, right_nulls_, first ? RowKind::kDelete : RowKind::kInsert));
          }
        }
        others->put(encoded, other);
      }
      for (int64_t i = 0; i < other.count; ++i) out.collect(pair(row, o, row.kind));
    }
    if (mine_outer && partners == 0) out.collect(pair(row, other_nulls, padded_kind));
    kept.count += adds(row) ? 1 : -1;
    kept.partners = partners;
    if (kept.count == 0) {
      mine->remove(key);
    } else {
      mine->put(key, kept);
    }
  }

  bool matches(const Row& left, const Row& right) const {
    if (!condition_) return true;
    const Value v = evaluate_or_throw(*condition_, joined_row(left, right, RowKind::kInsert), where_);
    return std::holds_alternative<bool>(v) && std::get<bool>(v);
  }

  const std::optional<Expr> condition_;
  const std::string where_;
  const bool left_outer_, right_outer_;
  const Row left_nulls_, right_nulls_;
  MapState<std::string, Kept>* left_ = nullptr;
  MapState<std::string, Kept>* right_ = nullptr;
};

}  // namespace

absl::StatusOr<DataStream<Row>> changelog_join(const DataStream<Row>& left, const DataStream<Row>& right,
                                               const PlanNode& n, const std::string& uid) {
  auto lk = std::make_shared<const KeyEncoder>(n.left_keys, n.input->column_names(), "JOIN ON");
  auto rk = std::make_shared<const KeyEncoder>(n.right_keys, n.right->column_names(), "JOIN ON");
  std::optional<Expr> condition;
  if (!n.exprs.empty()) condition = n.exprs[0];
  const std::string where = condition ? "JOIN ON " + condition->to_string(n.column_names()) : "";
  using JoinType = PlanNode::JoinType;
  const bool left_outer = n.join_type == JoinType::kLeft || n.join_type == JoinType::kFull;
  const bool right_outer = n.join_type == JoinType::kRight || n.join_type == JoinType::kFull;
  const size_t left_width = n.input->columns.size(), right_width = n.right->columns.size();
  DataStream<Row> out =
      left.connect(right)
          .key_by([lk](const Row& row) { return lk->encode_join(row); },
                  [rk](const Row& row) { return rk->encode_join(row); })
          .process<Row>(
              [condition, where, left_outer, right_outer, left_width, right_width] {
                return std::make_unique<ChangelogJoinRows>(condition, where, left_outer, right_outer, left_width,
                                                           right_width);
              },
              "changelog-join");
  out.uid(uid + "changelog-join");
  return out;
}

}  // namespace weir::sql
