#include "sql/transformer.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace weir::sql {
namespace {

using nlohmann::json;

// PostgreSQL's interval field bits (the typmod of INTERVAL '4' SECOND).
constexpr int64_t kMonthBit = 1 << 1, kYearBit = 1 << 2, kDayBit = 1 << 3, kHourBit = 1 << 10, kMinuteBit = 1 << 11,
                  kSecondBit = 1 << 12;

// PostgreSQL's frame option bits (nodes/parsenodes.h, FRAMEOPTION_*).
constexpr int kRows = 0x4, kGroups = 0x8, kStartUnboundedPreceding = 0x20, kEndCurrentRow = 0x400,
              kStartOffsetPreceding = 0x800, kExclude = 0x8000 | 0x10000 | 0x20000;

const json& empty_list() {
  static const json kEmpty = json::array();
  return kEmpty;
}

// The one key of a node object ("A_Const", "ColumnRef", ...).
std::string node_name(const json& n) { return n.is_object() && !n.empty() ? n.begin().key() : ""; }

// The first location in `n` (its own, else depth first), or -1.
int location_of(const json& n) {
  if (!n.is_object()) return -1;
  if (auto l = n.find("location"); l != n.end() && l->is_number_integer() && l->get<int>() >= 0) return l->get<int>();
  for (const auto& [k, v] : n.items()) {
    if (v.is_object()) {
      const int l = location_of(v);
      if (l >= 0) return l;
    }
  }
  return -1;
}

const json& field(const json& body, const char* name) {
  static const json kNull;
  if (!body.is_object()) return kNull;
  auto it = body.find(name);
  return it == body.end() ? kNull : *it;
}

const json& list(const json& body, const char* name) {
  const json& f = field(body, name);
  return f.is_array() ? f : empty_list();
}

std::string text_of(const json& body, const char* name) {
  const json& f = field(body, name);
  return f.is_string() ? f.get<std::string>() : "";
}

// The string values of a list of {"String": {"sval": ...}} nodes.
std::vector<std::string> strings_of(const json& items) {
  std::vector<std::string> out;
  if (!items.is_array()) return out;
  for (const auto& s : items) {
    if (s.contains("String")) out.push_back(text_of(s["String"], "sval"));
  }
  return out;
}

// The value of an integer constant ({"ival": n}) at byte `location` of
// `text`; the parser's JSON omits a negative value (and 0), read from the
// text: "-7" or "- 7" as PostgreSQL folds them.
int64_t integer_value(const json& integer, std::string_view text, int location) {
  if (integer.contains("ival")) return integer["ival"].get<int64_t>();
  size_t i = location < 0 ? text.size() : static_cast<size_t>(location);
  auto blanks = [&] {
    while (i < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  blanks();
  bool negative = false;
  if (i < text.size() && text[i] == '-') {
    negative = true;
    ++i;
    blanks();
  }
  int64_t v = 0;
  // (PostgreSQL makes an integer constant past 32 bits a Float: no
  // overflow here, but the text is not trusted to say so.)
  for (; i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i])) && v > INT64_MIN / 100; ++i) {
    v = v * 10 - (text[i] - '0');  // as a negative number: -2^63 fits
  }
  return negative ? v : -v;
}

class Transformer {
 public:
  explicit Transformer(std::string_view text) : text_(text) {}

  ast::QueryStatement statement(const json& stmt) const {
    const std::string kind = node_name(stmt);
    const json& b = stmt[kind];
    if (kind == "SelectStmt") return select(b);
    if (kind == "InsertStmt") {
      ast::Insert insert;
      const json& relation = field(b, "relation");
      insert.table = {text_of(relation, "relname"), field(relation, "location").is_number() ? relation["location"].get<int>() : -1};
      insert.has_columns = !list(b, "cols").empty();
      const json& query = field(b, "selectStmt");
      if (query.contains("SelectStmt")) insert.query = select(query["SelectStmt"]);
      if (!query.contains("SelectStmt")) insert.query.unsupported.push_back({"INSERT ... DEFAULT VALUES", insert.table.offset});
      if (b.contains("onConflictClause")) insert.query.unsupported.push_back({"ON CONFLICT", location_of(b["onConflictClause"])});
      if (b.contains("returningList")) insert.query.unsupported.push_back({"RETURNING", location_of(b["returningList"][0])});
      if (b.contains("withClause")) insert.query.unsupported.push_back({"WITH", location_of(b["withClause"])});
      return insert;
    }
    if (kind == "ViewStmt") {
      ast::CreateView view;
      const json& name = field(b, "view");
      view.name = {text_of(name, "relname"), field(name, "location").is_number() ? name["location"].get<int>() : -1};
      view.columns = strings_of(list(b, "aliases"));
      view.or_replace = field(b, "replace").is_boolean() && b["replace"].get<bool>();
      const json& query = field(b, "query");
      if (query.contains("SelectStmt")) view.query = select(query["SelectStmt"]);
      return view;
    }
    static const std::map<std::string, std::string> kNames = {
        {"UpdateStmt", "UPDATE"}, {"DeleteStmt", "DELETE"}, {"MergeStmt", "MERGE"}, {"CopyStmt", "COPY"},
        {"TransactionStmt", "a transaction statement"}, {"ExplainStmt", "EXPLAIN (of PostgreSQL)"}};
    auto it = kNames.find(kind);
    return ast::OtherStatement{it == kNames.end() ? kind : it->second};
  }

  ast::Select select(const json& s) const {
    ast::Select out;
    out.offset = location_of(s);
    const std::string op = text_of(s, "op");
    if (!op.empty() && op != "SETOP_NONE") {
      out.set_op = op == "SETOP_UNION" ? ast::Select::SetOp::kUnion
                   : op == "SETOP_INTERSECT" ? ast::Select::SetOp::kIntersect
                                             : ast::Select::SetOp::kExcept;
      out.all = field(s, "all").is_boolean() && s["all"].get<bool>();
      out.left = select(field(s, "larg"));
      out.right = select(field(s, "rarg"));
    }
    const json& distinct = field(s, "distinctClause");
    if (distinct.is_array()) {
      if (!distinct.empty() && !distinct[0].empty()) {
        out.unsupported.push_back({"DISTINCT ON", location_of(distinct)});
      } else {
        out.distinct = true;
      }
    }
    for (const json& t : list(s, "targetList")) {
      const json& r = field(t, "ResTarget");
      ast::Select::Target target;
      target.expr = expr(field(r, "val"));
      target.alias = text_of(r, "name");
      target.offset = field(r, "location").is_number() ? r["location"].get<int>() : -1;
      out.targets.push_back(std::move(target));
    }
    for (const json& f : list(s, "fromClause")) out.from.push_back(table_ref(f));
    if (s.contains("whereClause")) out.where = expr(s["whereClause"]);
    for (const json& g : list(s, "groupClause")) {
      if (node_name(g) == "GroupingSet") {
        out.group_by.push_back(unsupported("GROUPING SETS, ROLLUP and CUBE", location_of(g)));
      } else {
        out.group_by.push_back(expr(g));
      }
    }
    if (s.contains("havingClause")) out.having = expr(s["havingClause"]);
    for (const json& w : list(s, "windowClause")) {
      const json& def = field(w, "WindowDef");
      out.windows.push_back({text_of(def, "name"), over(def)});
    }
    for (const json& o : list(s, "sortClause")) out.order_by.push_back(sort_item(o));
    if (s.contains("limitCount")) out.limit = expr(s["limitCount"]);
    if (text_of(s, "limitOption") == "LIMIT_OPTION_WITH_TIES") out.unsupported.push_back({"FETCH ... WITH TIES", out.offset});
    static const std::vector<std::pair<const char*, const char*>> kNotYet = {
        {"limitOffset", "OFFSET"}, {"withClause", "WITH"}, {"valuesLists", "VALUES"},
        {"lockingClause", "FOR UPDATE and FOR SHARE"}, {"intoClause", "SELECT INTO"}};
    for (const auto& [name, what] : kNotYet) {
      if (!s.contains(name)) continue;
      const json& f = s[name];
      out.unsupported.push_back({what, location_of(f.is_array() && !f.empty() ? f[0] : f)});
    }
    return out;
  }

  ast::SortItem sort_item(const json& item) const {
    const json& by = field(item, "SortBy");
    ast::SortItem out;
    out.expr = expr(field(by, "node"));
    out.descending = text_of(by, "sortby_dir") == "SORTBY_DESC";
    const std::string nulls = text_of(by, "sortby_nulls");
    out.nulls_order = !nulls.empty() && nulls != "SORTBY_NULLS_DEFAULT";
    out.offset = location_of(item);
    return out;
  }

  ast::Over over(const json& def) const {
    ast::Over out;
    out.offset = location_of(def);
    out.name = text_of(def, "name");
    out.base = text_of(def, "refname");
    for (const json& k : list(def, "partitionClause")) out.partition_by.push_back(expr(k));
    for (const json& o : list(def, "orderClause")) out.order_by.push_back(sort_item(o));
    const int options = field(def, "frameOptions").is_number() ? def["frameOptions"].get<int>() : 0;
    out.unit = (options & kGroups) ? ast::Over::Unit::kGroups : (options & kRows) ? ast::Over::Unit::kRows : ast::Over::Unit::kRange;
    if (options & kStartOffsetPreceding) {
      out.start = ast::Over::Start::kPreceding;
      out.preceding = expr(field(def, "startOffset"));
    } else {
      out.start = (options & kStartUnboundedPreceding) ? ast::Over::Start::kUnboundedPreceding : ast::Over::Start::kOther;
    }
    out.ends_at_current_row = (options & kEndCurrentRow) != 0;
    out.exclude = (options & kExclude) != 0;
    return out;
  }

  ast::TableRef table_ref(const json& item) const {
    const std::string kind = node_name(item);
    const json& r = item[kind];
    ast::TableRef out;
    out.offset = location_of(item);
    auto alias = [&] {
      if (!r.contains("alias")) return;
      out.alias = text_of(r["alias"], "aliasname");
      out.alias_columns = strings_of(list(r["alias"], "colnames"));
    };
    if (kind == "RangeVar") {
      out.kind = ast::TableRef::Kind::kTable;
      out.name = text_of(r, "relname");
      out.offset = field(r, "location").is_number() ? r["location"].get<int>() : -1;
      alias();
      return out;
    }
    if (kind == "RangeSubselect") {
      if (field(r, "lateral").is_boolean() && r["lateral"].get<bool>()) return unsupported_ref("LATERAL (SELECT ...)", out.offset);
      out.kind = ast::TableRef::Kind::kSubquery;
      out.query = select(field(field(r, "subquery"), "SelectStmt"));
      alias();
      return out;
    }
    if (kind == "RangeFunction") {
      const json& functions = list(r, "functions");
      if (functions.size() != 1) return unsupported_ref("ROWS FROM (...)", out.offset);
      out.ordinality = field(r, "ordinality").is_boolean() && r["ordinality"].get<bool>();
      const json& items = list(field(functions[0], "List"), "items");
      if (items.empty() || node_name(items[0]) != "FuncCall") {
        return unsupported_ref("FROM " + (items.empty() ? std::string("this function") : node_name(items[0])),
                               items.empty() ? out.offset : location_of(items[0]));
      }
      out.kind = ast::TableRef::Kind::kFunction;
      out.call = expr(items[0]);
      alias();
      return out;
    }
    if (kind == "JoinExpr") {
      out.kind = ast::TableRef::Kind::kJoin;
      out.offset = location_of(r);
      static const std::map<std::string, ast::TableRef::JoinType> kTypes = {
          {"JOIN_INNER", ast::TableRef::JoinType::kInner}, {"JOIN_LEFT", ast::TableRef::JoinType::kLeft},
          {"JOIN_RIGHT", ast::TableRef::JoinType::kRight}, {"JOIN_FULL", ast::TableRef::JoinType::kFull}};
      const std::string type = text_of(r, "jointype");
      auto known = kTypes.find(type);
      out.join_type = known == kTypes.end() ? ast::TableRef::JoinType::kOther : known->second;
      if (known == kTypes.end()) out.what = type;
      out.natural = field(r, "isNatural").is_boolean() && r["isNatural"].get<bool>();
      out.using_columns = strings_of(list(r, "usingClause"));
      if (r.contains("quals")) out.on = expr(r["quals"]);
      if (r.contains("alias")) out.alias = text_of(r["alias"], "aliasname");
      out.left = table_ref(field(r, "larg"));
      out.right = table_ref(field(r, "rarg"));
      return out;
    }
    static const std::map<std::string, std::string> kKinds = {{"RangeTableSample", "TABLESAMPLE"},
                                                              {"RangeTableFunc", "XMLTABLE"}};
    auto it = kKinds.find(kind);
    return unsupported_ref(it == kKinds.end() ? "FROM " + kind : it->second, out.offset);
  }

  ast::DataType type(const json& tn) const {
    ast::DataType out;
    const std::vector<std::string> names = strings_of(list(tn, "names"));
    const std::string name = absl::AsciiStrToLower(names.empty() ? "" : names.back());
    // PostgreSQL's internal names, as Flink (and the DDL) spells them.
    static const std::map<std::string, std::string> kFlinkNames = {
        {"int8", "BIGINT"},   {"int4", "INT"},        {"int2", "SMALLINT"},         {"float8", "DOUBLE"},
        {"float4", "FLOAT"},  {"numeric", "DECIMAL"}, {"bool", "BOOLEAN"},          {"bpchar", "CHAR"},
        {"bytea", "BYTES"},   {"timetz", "TIME WITH TIME ZONE"}, {"timestamptz", "TIMESTAMP WITH TIME ZONE"}};
    auto flink = kFlinkNames.find(name);
    out.name = flink != kFlinkNames.end() ? flink->second : absl::AsciiStrToUpper(name);
    out.offset = field(tn, "location").is_number() ? tn["location"].get<int>() : -1;
    if (out.name != "INTERVAL") {
      for (const json& m : list(tn, "typmods")) {
        const json& c = field(m, "A_Const");
        out.params.push_back(c.contains("ival") ? static_cast<int>(integer_value(c["ival"], text_, location_of(m))) : -1);
      }
    }
    if (tn.contains("arrayBounds")) {
      ast::DataType array;
      array.name = "ARRAY";
      array.offset = out.offset;
      array.elements.push_back(std::move(out));
      return array;
    }
    return out;
  }

  // The unit of INTERVAL '4' SECOND, from the type's typmod: "" when none.
  static std::string interval_unit(const json& tn) {
    const json& mods = list(tn, "typmods");
    if (mods.empty()) return "";
    const json& c = field(mods[0], "A_Const");
    const int64_t bits = field(field(c, "ival"), "ival").is_number() ? c["ival"]["ival"].get<int64_t>() : 0;
    static const std::map<int64_t, std::string> kUnits = {{kSecondBit, "SECOND"}, {kMinuteBit, "MINUTE"},
                                                          {kHourBit, "HOUR"},     {kDayBit, "DAY"},
                                                          {kMonthBit, "MONTH"},   {kYearBit, "YEAR"}};
    auto it = kUnits.find(bits);
    return it == kUnits.end() ? "?" : it->second;
  }

  ast::Expr expr(const json& n) const {
    const std::string kind = node_name(n);
    const json& b = kind.empty() ? n : n[kind];
    ast::Expr e;
    e.offset = location_of(n);
    if (kind == "ColumnRef") {
      const json& fields = list(b, "fields");
      e.names = strings_of(fields);
      e.kind = !fields.empty() && fields.back().contains("A_Star") ? ast::Expr::Kind::kStar : ast::Expr::Kind::kColumn;
      return e;
    }
    if (kind == "A_Const") {
      e.kind = ast::Expr::Kind::kLiteral;
      if (b.contains("isnull") && b["isnull"].is_boolean() && b["isnull"].get<bool>()) return e;
      if (b.contains("ival")) {
        e.literal.kind = ast::Literal::Kind::kInteger;
        e.literal.integer = integer_value(b["ival"], text_, e.offset);
      } else if (b.contains("fval")) {
        e.literal.kind = ast::Literal::Kind::kNumber;
        e.literal.text = text_of(b["fval"], "fval");
      } else if (b.contains("sval")) {
        e.literal.kind = ast::Literal::Kind::kString;
        e.literal.text = text_of(b["sval"], "sval");
      } else if (b.contains("boolval")) {
        e.literal.kind = ast::Literal::Kind::kBoolean;
        e.literal.boolean = field(b["boolval"], "boolval").is_boolean() && b["boolval"]["boolval"].get<bool>();
      } else {
        return unsupported("this literal", e.offset);
      }
      return e;
    }
    if (kind == "TypeCast") {
      e.kind = ast::Expr::Kind::kCast;
      e.type = type(field(b, "typeName"));
      if (e.type.name == "INTERVAL") e.unit = interval_unit(field(b, "typeName"));
      // TRY_CAST(...) reaches PostgreSQL's grammar as CAST(...), the TRY_
      // blanked: the script's own text says which it was.
      e.try_cast = e.offset >= 4 && absl::EqualsIgnoreCase(std::string(text_.substr(static_cast<size_t>(e.offset) - 4, 4)), "TRY_");
      e.args.push_back(expr(field(b, "arg")));
      return e;
    }
    if (kind == "A_Expr") return operator_expr(b, e.offset);
    if (kind == "BoolExpr") {
      const std::string op = text_of(b, "boolop");
      e.kind = op == "AND_EXPR" ? ast::Expr::Kind::kAnd : op == "OR_EXPR" ? ast::Expr::Kind::kOr : ast::Expr::Kind::kNot;
      for (const json& a : list(b, "args")) e.args.push_back(expr(a));
      return e;
    }
    if (kind == "NullTest") {
      e.kind = ast::Expr::Kind::kIsNull;
      e.negated = text_of(b, "nulltesttype") != "IS_NULL";
      e.args.push_back(expr(field(b, "arg")));
      return e;
    }
    if (kind == "CoalesceExpr") {
      e.kind = ast::Expr::Kind::kCoalesce;
      for (const json& a : list(b, "args")) e.args.push_back(expr(a));
      return e;
    }
    if (kind == "CaseExpr") {
      e.kind = ast::Expr::Kind::kCase;
      if (b.contains("arg")) e.subject = expr(b["arg"]);
      for (const json& w : list(b, "args")) {
        const json& cw = field(w, "CaseWhen");
        e.args.push_back(expr(field(cw, "expr")));
        e.args.push_back(expr(field(cw, "result")));
      }
      if (b.contains("defresult")) e.otherwise = expr(b["defresult"]);
      return e;
    }
    if (kind == "FuncCall") {
      e.kind = ast::Expr::Kind::kFunction;
      e.names = strings_of(list(b, "funcname"));
      for (const json& a : list(b, "args")) e.args.push_back(expr(a));
      e.star = field(b, "agg_star").is_boolean() && b["agg_star"].get<bool>();
      e.distinct = field(b, "agg_distinct").is_boolean() && b["agg_distinct"].get<bool>();
      e.ordered = b.contains("agg_order") || (field(b, "agg_within_group").is_boolean() && b["agg_within_group"].get<bool>());
      e.sql_syntax = text_of(b, "funcformat") == "COERCE_SQL_SYNTAX";
      if (b.contains("agg_filter")) e.filter = expr(b["agg_filter"]);
      if (b.contains("over")) e.over = over(b["over"]);
      return e;
    }
    if (kind == "NamedArgExpr") {
      e.kind = ast::Expr::Kind::kNamedArg;
      e.names = {text_of(b, "name")};
      e.args.push_back(expr(field(b, "arg")));
      return e;
    }
    if (kind == "SubLink") {
      e.kind = ast::Expr::Kind::kSubquery;
      static const std::map<std::string, std::string> kUses = {
          {"EXPR_SUBLINK", ""},           {"EXISTS_SUBLINK", "EXISTS (SELECT ...)"}, {"ANY_SUBLINK", "IN (SELECT ...)"},
          {"ALL_SUBLINK", "ALL (SELECT ...)"}, {"ARRAY_SUBLINK", "ARRAY(SELECT ...)"}};
      auto use = kUses.find(text_of(b, "subLinkType"));
      e.what = use == kUses.end() ? "this subquery" : use->second;
      e.query = select(field(field(b, "subselect"), "SelectStmt"));
      return e;
    }
    if (kind == "SQLValueFunction") {
      const std::string op = text_of(b, "op");
      static const std::map<std::string, std::string> kNow = {{"SVFOP_CURRENT_TIMESTAMP", "current_timestamp"},
                                                              {"SVFOP_CURRENT_TIMESTAMP_N", "current_timestamp"},
                                                              {"SVFOP_LOCALTIMESTAMP", "localtimestamp"},
                                                              {"SVFOP_LOCALTIMESTAMP_N", "localtimestamp"},
                                                              {"SVFOP_CURRENT_DATE", "current_date"},
                                                              {"SVFOP_CURRENT_TIME", "current_time"},
                                                              {"SVFOP_CURRENT_TIME_N", "current_time"},
                                                              {"SVFOP_LOCALTIME", "localtime"},
                                                              {"SVFOP_LOCALTIME_N", "localtime"}};
      if (auto now = kNow.find(op); now != kNow.end()) {
        e.kind = ast::Expr::Kind::kFunction;
        e.names = {now->second};
        e.sql_syntax = true;
        return e;
      }
    }
    if (kind == "A_ArrayExpr") {  // ARRAY[a, b, ...]
      e.kind = ast::Expr::Kind::kArray;
      for (const json& a : list(b, "elements")) e.args.push_back(expr(a));
      return e;
    }
    if (kind == "A_Indirection") {  // x[i], x[i][j]
      ast::Expr base = expr(field(b, "arg"));
      for (const json& step : list(b, "indirection")) {
        const json& ix = field(step, "A_Indices");
        if (!ix.is_object()) return unsupported("field selection of an expression ((x).f)", e.offset);
        if ((field(ix, "is_slice").is_boolean() && ix["is_slice"].get<bool>()) || !ix.contains("uidx")) {
          return unsupported("array slices (x[a:b])", e.offset);
        }
        ast::Expr sub;
        sub.kind = ast::Expr::Kind::kSubscript;
        sub.offset = e.offset;
        sub.args.push_back(std::move(base));
        sub.args.push_back(expr(ix["uidx"]));
        base = std::move(sub);
      }
      return base;
    }
    static const std::map<std::string, std::string> kKinds = {
        {"BooleanTest", "IS TRUE, IS FALSE and IS UNKNOWN"},
        {"MinMaxExpr", "GREATEST and LEAST"},
        {"SQLValueFunction", "CURRENT_USER and the other SQL value functions of users and catalogs"},
        {"RowExpr", "ROW(...) values"},
        {"ParamRef", "parameters ($1)"},
        {"CollateClause", "COLLATE"},
        {"GroupingFunc", "GROUPING()"}};
    auto it = kKinds.find(kind);
    return unsupported(it == kKinds.end() ? "the expression " + kind : it->second, e.offset);
  }

 private:
  static ast::Expr unsupported(std::string what, int offset) {
    ast::Expr e;
    e.kind = ast::Expr::Kind::kUnsupported;
    e.what = std::move(what);
    e.offset = offset;
    return e;
  }

  static ast::TableRef unsupported_ref(std::string what, int offset) {
    ast::TableRef r;
    r.kind = ast::TableRef::Kind::kUnsupported;
    r.what = std::move(what);
    r.offset = offset;
    return r;
  }

  ast::Expr operator_expr(const json& b, int at) const {
    const std::string kind = text_of(b, "kind");
    const std::vector<std::string> name = strings_of(list(b, "name"));
    const std::string op = name.empty() ? "?" : name.back();
    ast::Expr e;
    e.offset = at;
    auto operand = [&](const char* side) { return expr(field(b, side)); };
    if (kind == "AEXPR_OP") {
      e.kind = ast::Expr::Kind::kOperator;
      e.op = op;
      for (const char* side : {"lexpr", "rexpr"}) {
        if (b.contains(side)) e.args.push_back(operand(side));
      }
      return e;
    }
    if (kind == "AEXPR_IN") {
      const json& items = field(b, "rexpr");
      if (node_name(items) != "List") return unsupported("IN (SELECT ...)", at);
      e.kind = ast::Expr::Kind::kIn;
      e.negated = op == "<>";
      e.args.push_back(operand("lexpr"));
      for (const json& item : list(items["List"], "items")) e.args.push_back(expr(item));
      return e;
    }
    if (kind == "AEXPR_LIKE") {  // name "~~" (LIKE) or "!~~" (NOT LIKE)
      e.kind = ast::Expr::Kind::kLike;
      e.negated = op == "!~~";
      e.args.push_back(operand("lexpr"));
      e.args.push_back(operand("rexpr"));
      return e;
    }
    if (kind == "AEXPR_BETWEEN" || kind == "AEXPR_NOT_BETWEEN") {
      const json& bounds = list(field(field(b, "rexpr"), "List"), "items");
      if (bounds.size() != 2) return unsupported("BETWEEN without two bounds", at);
      e.kind = ast::Expr::Kind::kBetween;
      e.negated = kind == "AEXPR_NOT_BETWEEN";
      e.args.push_back(operand("lexpr"));
      for (const json& bound : bounds) e.args.push_back(expr(bound));
      return e;
    }
    if (kind == "AEXPR_NULLIF") {
      e.kind = ast::Expr::Kind::kNullIf;
      e.args.push_back(operand("lexpr"));
      e.args.push_back(operand("rexpr"));
      return e;
    }
    static const std::map<std::string, std::string> kKinds = {
        {"AEXPR_ILIKE", "ILIKE"},
        {"AEXPR_DISTINCT", "IS DISTINCT FROM"},
        {"AEXPR_NOT_DISTINCT", "IS NOT DISTINCT FROM"},
        {"AEXPR_SIMILAR", "SIMILAR TO"},
        {"AEXPR_OP_ANY", "ANY"},
        {"AEXPR_OP_ALL", "ALL"},
        {"AEXPR_BETWEEN_SYM", "BETWEEN SYMMETRIC"},
        {"AEXPR_NOT_BETWEEN_SYM", "NOT BETWEEN SYMMETRIC"}};
    auto it = kKinds.find(kind);
    return unsupported(it == kKinds.end() ? kind : it->second, at);
  }

  const std::string_view text_;
};

}  // namespace

ast::QueryStatement transform_statement(const json& stmt, std::string_view text) {
  return Transformer(text).statement(stmt);
}

ast::Expr transform_expression(const json& node, std::string_view text) { return Transformer(text).expr(node); }

}  // namespace weir::sql
