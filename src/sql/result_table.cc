#include "sql/result_table.h"

#include <algorithm>

#include "sql/decimal.h"
#include "sql/values.h"
#include "sql/expression.h"

namespace weir::sql {

ResultTable::ResultTable(std::vector<Column> columns, ResultOrder order, bool append_only, size_t max_rows)
    : columns_(std::move(columns)), order_(std::move(order)), append_only_(append_only), max_rows_(max_rows) {}

void ResultTable::apply(const Row& row) {
  // The key: each cell's text, NULL apart from the text "NULL".
  std::string key;
  for (size_t i = 0; i < row.values.size(); ++i) {
    std::optional<std::string> t = row.text(i);
    key += t ? "\x01" + *t : std::string("\x00", 1);
    key += '\x1f';
  }
  std::lock_guard lock(mu_);
  if (limit_reached_ || overflowed_) return;
  ++version_;
  const bool adds = row.kind == RowKind::kInsert || row.kind == RowKind::kUpdateAfter;
  auto it = rows_.find(key);
  if (it == rows_.end()) {
    if (rows_.size() >= max_rows_) {
      overflowed_ = true;
      return;
    }
    it = rows_.emplace(std::move(key), Entry{row, 0, next_++}).first;
    it->second.row.kind = RowKind::kInsert;
  }
  it->second.count += adds ? 1 : -1;
  total_ += adds ? 1 : -1;
  // A retraction ahead of its row (from another subtask) waits as a
  // negative count.
  if (it->second.count == 0) rows_.erase(it);
  if (append_only_ && order_.keys.empty() && order_.limit && total_ >= *order_.limit) limit_reached_ = true;
}

uint64_t ResultTable::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

bool ResultTable::limit_reached() const {
  std::lock_guard lock(mu_);
  return limit_reached_;
}

bool ResultTable::overflowed() const {
  std::lock_guard lock(mu_);
  return overflowed_;
}

std::string ResultTable::cell(const Row& row, size_t i) const {
  if (std::holds_alternative<std::monostate>(row.values[i])) return "<NULL>";
  if (columns_[i].type.kind == TypeKind::kTimestamp) {
    if (const auto* ms = std::get_if<int64_t>(&row.values[i])) return timestamp_text(*ms);
  }
  if (columns_[i].type.collection()) {  // the JSON a sink is given, shown as Flink shows it: [a, b], {k=v}
    if (auto v = from_wire(row.values[i], columns_[i].type); v.ok()) return value_text(*v, columns_[i].type);
  }
  if (columns_[i].type.kind == TypeKind::kBoolean) {
    if (const auto* b = std::get_if<bool>(&row.values[i])) return *b ? "TRUE" : "FALSE";
  }
  return row.text(i).value_or("<NULL>");
}

std::vector<Value> ResultTable::sort_key(const Row& row) const {
  std::vector<Value> key;
  for (const auto& [column, descending] : order_.keys) {
    Value v = row.values[static_cast<size_t>(column)];
    // A DECIMAL comes as its text: ordered as its number.
    if (const auto* text = std::get_if<std::string>(&v); text && columns_[column].type.kind == TypeKind::kDecimal) {
      if (auto d = parse_decimal(*text, columns_[column].type.scale); d.ok()) v = *d;
    }
    key.push_back(std::move(v));
  }
  return key;
}

std::string ResultTable::render(size_t max_shown) const {
  struct Shown {
    const Entry* entry;
    std::vector<Value> key;
  };
  std::vector<Shown> shown;
  std::vector<bool> descending;
  for (const auto& k : order_.keys) descending.push_back(k.second);
  std::vector<std::vector<std::string>> cells;
  size_t more = 0;
  {
    std::lock_guard lock(mu_);
    for (const auto& [k, e] : rows_) {
      if (e.count > 0) shown.push_back({&e, sort_key(e.row)});
    }
    std::sort(shown.begin(), shown.end(), [&](const Shown& a, const Shown& b) {
      const int c = compare_sort_keys(a.key, b.key, descending);
      return c != 0 ? c < 0 : a.entry->first < b.entry->first;
    });
    size_t limit = order_.limit ? static_cast<size_t>(*order_.limit) : SIZE_MAX;
    for (const Shown& s : shown) {
      for (int64_t n = 0; n < s.entry->count && limit > 0; ++n, --limit) {
        if (cells.size() == max_shown) {
          ++more;
          continue;
        }
        std::vector<std::string> row;
        for (size_t i = 0; i < columns_.size(); ++i) row.push_back(cell(s.entry->row, i));
        cells.push_back(std::move(row));
      }
    }
  }
  std::vector<size_t> width;
  for (const Column& c : columns_) width.push_back(c.name.size());
  for (const auto& row : cells) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  auto numeric = [&](size_t i) {
    const TypeKind k = columns_[i].type.kind;
    return k == TypeKind::kBigInt || k == TypeKind::kDouble || k == TypeKind::kDecimal || k == TypeKind::kInterval;
  };
  std::string rule = "+";
  for (size_t w : width) rule += std::string(w + 2, '-') + "+";
  rule += "\n";
  auto line = [&](const std::vector<std::string>& row, bool header) {
    std::string out = "|";
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      out += " " + (numeric(i) && !header ? pad + row[i] : row[i] + pad) + " |";
    }
    return out + "\n";
  };
  std::vector<std::string> names;
  for (const Column& c : columns_) names.push_back(c.name);
  std::string out = rule + line(names, true) + rule;
  for (const auto& row : cells) out += line(row, false);
  out += rule;
  if (more > 0) out += "... " + std::to_string(more) + " more\n";
  const size_t n = cells.size() + more;
  out += std::to_string(n) + (n == 1 ? " row\n" : " rows\n");
  return out;
}

}  // namespace weir::sql
