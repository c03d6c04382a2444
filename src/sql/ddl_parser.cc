#include "sql/ddl_parser.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "sql/parser.h"

namespace weir::sql {

ast::Name name_of(const Token& t) {
  return {t.kind == Token::Kind::kWord ? absl::AsciiStrToLower(t.text) : t.text, t.offset};
}

namespace {

// A cursor over one statement's tokens; past its end it sees a kEnd token
// at the statement's end.
class Cursor {
 public:
  Cursor(std::string_view text, const std::vector<Token>& tokens, size_t begin, size_t end)
      : text_(text), tokens_(tokens), i_(begin), end_(end) {
    end_token_.kind = Token::Kind::kEnd;
    end_token_.offset = end_token_.end = end < tokens.size() ? tokens[end].offset : static_cast<int>(text.size());
  }

  const Token& peek(size_t ahead = 0) const { return i_ + ahead < end_ ? tokens_[i_ + ahead] : end_token_; }
  const Token& next() {
    const Token& t = peek();
    if (i_ < end_) ++i_;
    return t;
  }
  bool at_end() const { return i_ >= end_; }
  size_t index() const { return i_; }

  bool keyword(std::string_view k) {
    if (!peek().is_keyword(k)) return false;
    ++i_;
    return true;
  }
  bool symbol(std::string_view s) {
    if (!peek().is_symbol(s)) return false;
    ++i_;
    return true;
  }

  absl::Status error_at(const Token& t, const std::string& what) const {
    return absl::InvalidArgumentError(position_of(text_, t.offset) + ": " + what);
  }
  absl::Status expected(const std::string& what) const {
    const Token& t = peek();
    const std::string got = t.kind == Token::Kind::kEnd ? "the end of the statement" : "\"" + token_at(text_, t.offset) + "\"";
    return error_at(t, "expected " + what + ", found " + got);
  }
  absl::Status expect_keyword(std::string_view k) { return keyword(k) ? absl::OkStatus() : expected(std::string(k)); }
  absl::Status expect_symbol(std::string_view s) {
    return symbol(s) ? absl::OkStatus() : expected("'" + std::string(s) + "'");
  }
  absl::Status unsupported(const Token& t, const std::string& what) const {
    return error_at(t, what + " is not supported yet (docs/sql.md, \"Flink compatibility\")");
  }

  // A name: a word or a quoted identifier. A qualified name
  // (catalog.database.name) is taken when its qualifiers are Flink's
  // default catalog and database.
  absl::StatusOr<ast::Name> name(const std::string& what) {
    const Token& t = peek();
    if (!t.is(Token::Kind::kWord) && !t.is(Token::Kind::kIdentifier)) return expected(what);
    next();
    ast::Name n = name_of(t);
    std::vector<std::string> qualifiers;
    while (peek().is_symbol(".") && (peek(1).is(Token::Kind::kWord) || peek(1).is(Token::Kind::kIdentifier))) {
      qualifiers.push_back(n.text);
      next();
      n = name_of(next());
    }
    for (const std::string& q : qualifiers) {
      if (q != "default_catalog" && q != "default_database") {
        return error_at(t, "catalogs and databases are not supported yet: " + absl::StrJoin(qualifiers, ".") + "." + n.text +
                               " (name the table alone)");
      }
    }
    return n;
  }

  // ( name, ... )
  absl::StatusOr<std::vector<ast::Name>> name_list(const std::string& what) {
    std::vector<ast::Name> out;
    if (absl::Status s = expect_symbol("("); !s.ok()) return s;
    do {
      auto n = name(what);
      if (!n.ok()) return n.status();
      out.push_back(*std::move(n));
    } while (symbol(","));
    if (absl::Status s = expect_symbol(")"); !s.ok()) return s;
    return out;
  }

  // An option's key: 'a.b', "a.b", `a.b` or a.b written as words.
  absl::StatusOr<ast::Name> option_key() {
    const Token& t = peek();
    if (t.is(Token::Kind::kString) || t.is(Token::Kind::kIdentifier)) {
      next();
      return ast::Name{absl::AsciiStrToLower(t.text), t.offset};
    }
    if (!t.is(Token::Kind::kWord)) return expected("an option's name ('key')");
    std::string key = absl::AsciiStrToLower(next().text);
    while (peek().is_symbol(".") || peek().is_symbol("-")) {
      key += next().text;
      const Token& part = peek();
      if (!part.is(Token::Kind::kWord) && !part.is(Token::Kind::kNumber)) return expected("the rest of option " + key);
      key += absl::AsciiStrToLower(next().text);
    }
    return ast::Name{key, t.offset};
  }

  // An option's value: a string, a number, TRUE/FALSE or a word.
  absl::StatusOr<std::string> option_value(const std::string& key) {
    std::string sign;
    if (peek().is_symbol("-") && peek(1).is(Token::Kind::kNumber)) sign = next().text;
    const Token& t = peek();
    if (t.is(Token::Kind::kString) || t.is(Token::Kind::kNumber) || t.is(Token::Kind::kWord) ||
        t.is(Token::Kind::kIdentifier)) {
      next();
      return sign + t.text;
    }
    return expected("the value of option '" + key + "' (a 'string')");
  }

  // key = value
  absl::StatusOr<ast::Option> option() {
    auto key = option_key();
    if (!key.ok()) return key.status();
    if (!symbol("=") && !keyword("TO")) return expected("'=' after option '" + key->text + "'");
    auto value = option_value(key->text);
    if (!value.ok()) return value.status();
    return ast::Option{key->text, *std::move(value), key->offset};
  }

  // ( key = value, ... )
  absl::StatusOr<std::vector<ast::Option>> options() {
    std::vector<ast::Option> out;
    if (absl::Status s = expect_symbol("("); !s.ok()) return s;
    if (symbol(")")) return out;
    do {
      auto o = option();
      if (!o.ok()) return o.status();
      for (const ast::Option& before : out) {
        if (before.key == o->key) {
          return absl::InvalidArgumentError(position_of(text_, o->offset) + ": option '" + o->key + "' is given twice");
        }
      }
      out.push_back(*std::move(o));
    } while (symbol(","));
    if (absl::Status s = expect_symbol(")"); !s.ok()) return s;
    return out;
  }

  absl::StatusOr<ast::DataType> data_type() {
    const Token& t = peek();
    if (!t.is(Token::Kind::kWord)) return expected("a data type");
    // A type in a type (ROW<a ROW<...>>) is a level, as a parse node in a
    // parse node is (kMaxSqlNesting).
    if (type_depth_ >= kMaxSqlNesting) {
      return error_at(t, "types nest deeper than " + std::to_string(kMaxSqlNesting) + " levels (weir's limit; docs/sql.md \"Limits\")");
    }
    ++type_depth_;
    auto type = data_type_at(t);
    --type_depth_;
    return type;
  }

  absl::StatusOr<ast::DataType> data_type_at(const Token& t) {
    next();
    ast::DataType type;
    type.offset = t.offset;
    type.name = absl::AsciiStrToUpper(t.text);
    auto numbers = [&]() -> absl::Status {
      if (!symbol("(")) return absl::OkStatus();
      do {
        const Token& n = peek();
        int v = 0;
        if (!n.is(Token::Kind::kNumber) || !absl::SimpleAtoi(n.text, &v)) return expected("a whole number");
        next();
        type.params.push_back(v);
      } while (symbol(","));
      return expect_symbol(")");
    };
    if (type.name == "DOUBLE") {
      keyword("PRECISION");
    } else if (type.name == "CHARACTER" && keyword("VARYING")) {
      type.name = "VARCHAR";
    } else if (type.name == "ROW") {
      const bool angle = peek().is_symbol("<");
      if (!symbol("<") && !symbol("(")) return expected("'<' or '(' after ROW");
      const std::string close = angle ? ">" : ")";
      do {
        auto field = name("a field name");
        if (!field.ok()) return field.status();
        for (const ast::Name& f : type.field_names) {
          if (f.text == field->text) return error_at(tokens_[i_ - 1], "ROW field " + f.text + " is declared twice");
        }
        auto ft = data_type();
        if (!ft.ok()) return ft.status();
        if (peek().is(Token::Kind::kString)) next();  // the field's description
        type.field_names.push_back(*std::move(field));
        type.elements.push_back(*std::move(ft));
      } while (symbol(","));
      if (absl::Status s = expect_symbol(close); !s.ok()) return s;
    } else if (type.name == "ARRAY" || type.name == "MULTISET" || type.name == "MAP") {
      if (absl::Status s = expect_symbol("<"); !s.ok()) return s;
      const int n = type.name == "MAP" ? 2 : 1;
      for (int k = 0; k < n; ++k) {
        if (k > 0) {
          if (absl::Status s = expect_symbol(","); !s.ok()) return s;
        }
        auto element = data_type();
        if (!element.ok()) return element.status();
        type.elements.push_back(*std::move(element));
      }
      if (absl::Status s = expect_symbol(">"); !s.ok()) return s;
    } else {
      if (absl::Status s = numbers(); !s.ok()) return s;
      if (type.name == "TIMESTAMP" || type.name == "TIME") {
        if (keyword("WITHOUT")) {
          if (absl::Status s = expect_keyword("TIME"); !s.ok()) return s;
          if (absl::Status s = expect_keyword("ZONE"); !s.ok()) return s;
        } else if (keyword("WITH")) {
          if (keyword("LOCAL")) {
            type.name += "_LTZ";
          } else {
            return unsupported(t, type.name + " WITH TIME ZONE (Flink has none either; TIMESTAMP_LTZ is WITH LOCAL TIME ZONE)");
          }
          if (absl::Status s = expect_keyword("TIME"); !s.ok()) return s;
          if (absl::Status s = expect_keyword("ZONE"); !s.ok()) return s;
        }
      }
    }
    if (keyword("NOT")) {
      if (absl::Status s = expect_keyword("NULL"); !s.ok()) return s;
      type.not_null = true;
    } else {
      keyword("NULL");
    }
    return type;
  }

  // The text of an expression up to a ',' or ')' outside its parentheses
  // (or a COMMENT), which it does not include.
  absl::StatusOr<ast::ExprText> expression(const std::string& what) {
    const size_t first = i_;
    int depth = 0;
    while (!at_end()) {
      const Token& t = peek();
      if (depth == 0 && (t.is_symbol(",") || t.is_symbol(")") || t.is_keyword("COMMENT"))) break;
      if (t.is_symbol("(") || t.is_symbol("[")) ++depth;
      if (t.is_symbol(")") || t.is_symbol("]")) --depth;
      next();
    }
    if (i_ == first) return expected(what);
    return ast::ExprText{tokens_[first].offset, tokens_[i_ - 1].end};
  }

  std::string_view text() const { return text_; }

 private:
  std::string_view text_;
  const std::vector<Token>& tokens_;
  size_t i_, end_;
  Token end_token_;
  int type_depth_ = 0;
};

absl::Status expect_end(Cursor& c) { return c.at_end() ? absl::OkStatus() : c.expected("the end of the statement"); }

// PRIMARY KEY [NOT ENFORCED] after PRIMARY was read.
absl::Status primary_key_rest(Cursor& c) {
  if (absl::Status s = c.expect_keyword("KEY"); !s.ok()) return s;
  if (c.keyword("NOT")) return c.expect_keyword("ENFORCED");
  if (c.peek().is_keyword("ENFORCED")) {
    return c.error_at(c.peek(), "PRIMARY KEY ... ENFORCED: Flink and weir take only NOT ENFORCED keys");
  }
  return absl::OkStatus();
}

absl::StatusOr<ast::ColumnDef> column(Cursor& c) {
  ast::ColumnDef col;
  auto n = c.name("a column name");
  if (!n.ok()) return n.status();
  col.name = *std::move(n);
  if (c.keyword("AS")) {
    col.kind = ast::ColumnDef::Kind::kComputed;
    auto e = c.expression("the computed column's expression");
    if (!e.ok()) return e.status();
    col.expr = *e;
  } else {
    auto t = c.data_type();
    if (!t.ok()) return t.status();
    col.type = *std::move(t);
    if (c.keyword("METADATA")) {
      col.kind = ast::ColumnDef::Kind::kMetadata;
      if (c.keyword("FROM")) {
        const Token& k = c.peek();
        if (!k.is(Token::Kind::kString)) return c.expected("the metadata key ('key')");
        col.from = c.next().text;
      }
      col.is_virtual = c.keyword("VIRTUAL");
    }
    for (;;) {
      if (c.keyword("CONSTRAINT")) {
        auto cn = c.name("the constraint's name");
        if (!cn.ok()) return cn.status();
      }
      if (c.keyword("PRIMARY")) {
        if (absl::Status s = primary_key_rest(c); !s.ok()) return s;
        col.primary_key = true;
      } else if (c.keyword("NOT")) {  // PostgreSQL's spelling: the constraint after the type
        if (absl::Status s = c.expect_keyword("NULL"); !s.ok()) return s;
        col.type.not_null = true;
      } else if (!c.keyword("NULL")) {
        break;
      }
    }
  }
  if (c.keyword("COMMENT")) {
    if (!c.peek().is(Token::Kind::kString)) return c.expected("the comment ('text')");
    c.next();
  }
  return col;
}

absl::StatusOr<ast::CreateTable> create_table(Cursor& c) {
  ast::CreateTable t;
  t.offset = c.next().offset;  // CREATE
  t.temporary = c.keyword("TEMPORARY");
  if (absl::Status s = c.expect_keyword("TABLE"); !s.ok()) return s;
  if (c.keyword("IF")) {
    if (absl::Status s = c.expect_keyword("NOT"); !s.ok()) return s;
    if (absl::Status s = c.expect_keyword("EXISTS"); !s.ok()) return s;
    t.if_not_exists = true;
  }
  auto n = c.name("the table's name");
  if (!n.ok()) return n.status();
  t.name = *std::move(n);
  if (c.peek().is_keyword("AS")) return c.unsupported(c.peek(), "CREATE TABLE ... AS SELECT");
  if (c.symbol("(")) {
    do {
      const Token& at = c.peek();
      if (c.keyword("WATERMARK")) {
        if (t.watermark) return c.error_at(at, "table " + t.name.text + " has two WATERMARK clauses");
        ast::Watermark w;
        w.offset = at.offset;
        if (absl::Status s = c.expect_keyword("FOR"); !s.ok()) return s;
        auto col = c.name("the event-time column");
        if (!col.ok()) return col.status();
        w.column = *std::move(col);
        if (absl::Status s = c.expect_keyword("AS"); !s.ok()) return s;
        auto e = c.expression("the watermark's expression");
        if (!e.ok()) return e.status();
        w.expr = *e;
        t.watermark = std::move(w);
        continue;
      }
      if (at.is_keyword("CONSTRAINT") || (at.is_keyword("PRIMARY") && c.peek(1).is_keyword("KEY"))) {
        if (c.keyword("CONSTRAINT")) {
          auto cn = c.name("the constraint's name");
          if (!cn.ok()) return cn.status();
        }
        if (absl::Status s = c.expect_keyword("PRIMARY"); !s.ok()) return s;
        if (!t.primary_key.empty()) return c.error_at(at, "table " + t.name.text + " has two primary keys");
        if (absl::Status s = c.expect_keyword("KEY"); !s.ok()) return s;
        auto keys = c.name_list("a key column");
        if (!keys.ok()) return keys.status();
        t.primary_key = *std::move(keys);
        if (c.keyword("NOT")) {
          if (absl::Status s = c.expect_keyword("ENFORCED"); !s.ok()) return s;
        }
        continue;
      }
      if (at.is_keyword("UNIQUE") || at.is_keyword("FOREIGN") || at.is_keyword("CHECK")) {
        return c.unsupported(at, absl::AsciiStrToUpper(at.text) + " constraints (Flink has none either)");
      }
      auto col = column(c);
      if (!col.ok()) return col.status();
      for (const ast::ColumnDef& before : t.columns) {
        if (before.name.text == col->name.text) {
          return c.error_at(c.peek(), "column " + col->name.text + " is declared twice");
        }
      }
      t.columns.push_back(*std::move(col));
    } while (c.symbol(","));
    if (absl::Status s = c.expect_symbol(")"); !s.ok()) return s;
  }
  if (c.keyword("COMMENT")) {
    if (!c.peek().is(Token::Kind::kString)) return c.expected("the comment ('text')");
    c.next();
  }
  if (c.keyword("PARTITIONED") || (c.peek().is_keyword("PARTITION") && c.next().is_keyword("PARTITION"))) {
    if (absl::Status s = c.expect_keyword("BY"); !s.ok()) return s;
    c.keyword("LIST");  // weir's former spelling, PostgreSQL's: PARTITION BY LIST (...)
    auto by = c.name_list("a partition column");
    if (!by.ok()) return by.status();
    t.partitioned_by = *std::move(by);
  }
  if (c.keyword("WITH")) {
    auto o = c.options();
    if (!o.ok()) return o.status();
    t.options = *std::move(o);
  }
  if (c.keyword("LIKE")) {
    auto like = c.name("the table it is like");
    if (!like.ok()) return like.status();
    t.like = *std::move(like);
    if (c.symbol("(")) {
      do {
        const Token& how = c.peek();
        if (!how.is_keyword("INCLUDING") && !how.is_keyword("EXCLUDING") && !how.is_keyword("OVERWRITING")) {
          return c.expected("INCLUDING, EXCLUDING or OVERWRITING");
        }
        c.next();
        const Token& what = c.peek();
        if (!what.is(Token::Kind::kWord)) return c.expected("ALL, OPTIONS, WATERMARKS, GENERATED, METADATA, CONSTRAINTS or PARTITIONS");
        c.next();
        t.like_options.push_back({absl::AsciiStrToUpper(how.text), absl::AsciiStrToUpper(what.text)});
      } while (c.symbol(","));
      if (absl::Status s = c.expect_symbol(")"); !s.ok()) return s;
    }
  }
  if (absl::Status s = expect_end(c); !s.ok()) return s;
  return t;
}

}  // namespace

bool is_ddl(const std::vector<Token>& tokens, size_t begin, size_t end) {
  auto at = [&](size_t k) -> const Token& { return begin + k < end ? tokens[begin + k] : tokens.back(); };
  const Token& first = at(0);
  if (first.is_keyword("CREATE")) {
    return at(1).is_keyword("TABLE") || (at(1).is_keyword("TEMPORARY") && at(2).is_keyword("TABLE"));
  }
  if (first.is_keyword("DROP")) {
    const Token& what = at(1).is_keyword("TEMPORARY") ? at(2) : at(1);
    return what.is_keyword("TABLE") || what.is_keyword("VIEW");
  }
  if (first.is_keyword("ALTER")) return at(1).is_keyword("TABLE");
  return first.is_keyword("SET") || first.is_keyword("RESET") || first.is_keyword("SHOW") ||
         first.is_keyword("DESCRIBE") || first.is_keyword("DESC");
}

absl::StatusOr<ast::Statement> parse_ddl(std::string_view text, const std::vector<Token>& tokens, size_t begin,
                                         size_t end) {
  Cursor c(text, tokens, begin, end);
  const Token& first = c.peek();
  if (first.is_keyword("CREATE")) {
    auto t = create_table(c);
    if (!t.ok()) return t.status();
    return ast::Statement(*std::move(t));
  }
  if (c.keyword("SET")) {
    ast::Set set;
    if (!c.at_end()) {
      auto o = c.option();
      if (!o.ok()) return o.status();
      set.option = *std::move(o);
    }
    if (absl::Status s = expect_end(c); !s.ok()) return s;
    return ast::Statement(std::move(set));
  }
  if (c.keyword("RESET")) {
    ast::Reset reset;
    if (!c.at_end()) {
      auto k = c.option_key();
      if (!k.ok()) return k.status();
      reset.key = *std::move(k);
    }
    if (absl::Status s = expect_end(c); !s.ok()) return s;
    return ast::Statement(std::move(reset));
  }
  if (c.keyword("DROP")) {
    ast::Drop drop;
    c.keyword("TEMPORARY");
    drop.view = c.peek().is_keyword("VIEW");
    c.next();
    if (c.keyword("IF")) {
      if (absl::Status s = c.expect_keyword("EXISTS"); !s.ok()) return s;
      drop.if_exists = true;
    }
    auto n = c.name(drop.view ? "the view's name" : "the table's name");
    if (!n.ok()) return n.status();
    drop.name = *std::move(n);
    if (absl::Status s = expect_end(c); !s.ok()) return s;
    return ast::Statement(std::move(drop));
  }
  if (c.keyword("ALTER")) {
    c.next();  // TABLE
    ast::AlterTable alter;
    auto n = c.name("the table's name");
    if (!n.ok()) return n.status();
    alter.name = *std::move(n);
    if (c.keyword("SET")) {
      auto o = c.options();
      if (!o.ok()) return o.status();
      alter.set = *std::move(o);
    } else if (c.keyword("RESET")) {
      if (absl::Status s = c.expect_symbol("("); !s.ok()) return s;
      do {
        auto k = c.option_key();
        if (!k.ok()) return k.status();
        alter.reset.push_back(*std::move(k));
      } while (c.symbol(","));
      if (absl::Status s = c.expect_symbol(")"); !s.ok()) return s;
    } else if (c.keyword("RENAME")) {
      if (absl::Status s = c.expect_keyword("TO"); !s.ok()) return s;
      auto to = c.name("the new name");
      if (!to.ok()) return to.status();
      alter.rename_to = *std::move(to);
    } else {
      const Token& t = c.peek();
      return c.unsupported(t, "ALTER TABLE ... " + absl::AsciiStrToUpper(t.text) + " (SET, RESET and RENAME TO are)");
    }
    if (absl::Status s = expect_end(c); !s.ok()) return s;
    return ast::Statement(std::move(alter));
  }
  ast::Show show;
  if (c.keyword("DESCRIBE") || c.keyword("DESC")) {
    show.what = ast::Show::What::kDescribe;
  } else {
    c.next();  // SHOW
    const Token& what = c.peek();
    if (c.keyword("TABLES")) {
      show.what = ast::Show::What::kTables;
    } else if (c.keyword("VIEWS")) {
      show.what = ast::Show::What::kViews;
    } else if (c.keyword("CREATE")) {
      const bool view = c.keyword("VIEW");
      if (!view) {
        if (absl::Status s = c.expect_keyword("TABLE"); !s.ok()) return s;
      }
      show.what = view ? ast::Show::What::kCreateView : ast::Show::What::kCreateTable;
    } else {
      return c.unsupported(what, "SHOW " + absl::AsciiStrToUpper(what.text) + " (SHOW TABLES, SHOW VIEWS and SHOW CREATE TABLE are)");
    }
  }
  if (show.what != ast::Show::What::kTables && show.what != ast::Show::What::kViews) {
    auto n = c.name("a table's name");
    if (!n.ok()) return n.status();
    show.name = *std::move(n);
  }
  if (absl::Status s = expect_end(c); !s.ok()) return s;
  return ast::Statement(std::move(show));
}

}  // namespace weir::sql
