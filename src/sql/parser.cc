// The parser of sql/parser.h, in this order: positions for error messages
// and the tree's nesting limit, the Translator (Flink's syntax rewritten in
// place into PostgreSQL's, every byte kept where it was), offsets mapped back
// to the script as written, the statements refused by name, parse_script
// (splitting, DDL, libpg_query, the transformer) and parse_expression.
#include "sql/parser.h"

#include <pg_query.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "absl/strings/ascii.h"
#include "sql/ddl_parser.h"
#include "sql/lexer.h"
#include "sql/transformer.h"

namespace weir::sql {

std::string position_of(std::string_view text, int offset) {
  int line = 1, column = 1;
  for (int i = 0; i < offset && i < static_cast<int>(text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::string token_at(std::string_view text, int offset) {
  if (offset < 0 || offset >= static_cast<int>(text.size())) return "end of input";
  size_t i = static_cast<size_t>(offset);
  const char c = text[i];
  size_t end = i + 1;
  if (c == '\'' || c == '"') {
    end = text.find(c, i + 1);
    end = end == std::string_view::npos ? text.size() : end + 1;
  } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
  }
  return std::string(text.substr(i, std::min<size_t>(end - i, 40)));
}

namespace {

// The byte offset of the first parse node of `tree` nested deeper than
// kMaxSqlNesting (the nearest location at or above it), -2 when none is.
// Iterative: the tree may be as deep as the text is long.
int past_nesting_limit(const nlohmann::json& tree) {
  struct Item {
    const nlohmann::json* n;
    int depth;     // parse nodes above and including n
    int location;  // the nearest known location at or above n
  };
  std::vector<Item> stack = {{&tree, 0, -1}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    if (it.n->is_array()) {
      for (const auto& x : *it.n) stack.push_back({&x, it.depth, it.location});
      continue;
    }
    if (!it.n->is_object()) continue;
    int location = it.location;
    if (auto l = it.n->find("location"); l != it.n->end() && l->is_number_integer() && l->get<int>() >= 0) {
      location = l->get<int>();
    }
    // A parse node is {"NodeName": {fields}}.
    const bool node = it.n->size() == 1 && !it.n->begin().key().empty() && std::isupper(
                                                                                 static_cast<unsigned char>(it.n->begin().key()[0]));
    const int depth = it.depth + (node ? 1 : 0);
    if (depth > kMaxSqlNesting) {
      const nlohmann::json& fields = it.n->begin().value();
      if (fields.is_object()) {
        if (auto l = fields.find("location"); l != fields.end() && l->is_number_integer() && l->get<int>() >= 0) {
          return l->get<int>();
        }
      }
      return location;
    }
    for (const auto& [key, value] : it.n->items()) stack.push_back({&value, depth, location});
  }
  return -2;
}

}  // namespace

namespace {

// The text of statement tokens [begin, end) (one statement) with Flink's
// spellings turned into PostgreSQL's in `buffer` (the script's text, byte
// for byte), and what is taken out kept in `st`.
class Translator {
 public:
  // `inserted`: text to put before an offset of the script (the only
  // edits that are not byte for byte), sorted by offset as they are made.
  Translator(std::string_view text, const std::vector<Token>& tokens, std::string* buffer,
             std::vector<std::pair<int, std::string>>* inserted)
      : text_(text), tokens_(tokens), buffer_(*buffer), inserted_(*inserted) {}

  absl::Status translate(size_t begin, size_t end, Statement* st) {
    // CREATE VIEW IF NOT EXISTS
    if (tokens_[begin].is_keyword("CREATE")) {
      size_t k = begin + 1;
      while (k < end && (tokens_[k].is_keyword("TEMPORARY") || tokens_[k].is_keyword("TEMP") || tokens_[k].is_keyword("OR") ||
                         tokens_[k].is_keyword("REPLACE"))) {
        ++k;
      }
      if (k + 3 < end && tokens_[k].is_keyword("VIEW") && tokens_[k + 1].is_keyword("IF") && tokens_[k + 2].is_keyword("NOT") &&
          tokens_[k + 3].is_keyword("EXISTS")) {
        for (size_t j = k + 1; j <= k + 3; ++j) blank(j);
        st->if_not_exists = true;
      }
    }
    if (tokens_[begin].is_keyword("INSERT") && begin + 1 < end && tokens_[begin + 1].is_keyword("OVERWRITE")) {
      return unsupported(tokens_[begin + 1], "INSERT OVERWRITE");
    }
    for (size_t i = begin; i < end; ++i) {
      const Token& t = tokens_[i];
      if (t.is(Token::Kind::kHint)) return unsupported(t, "a hint (/*+ ... */)");
      if (t.is(Token::Kind::kIdentifier) && text_[t.offset] == '`') {
        if (t.text.find('"') != std::string::npos) return unsupported(t, "a name with a double quote in it");
        buffer_[t.offset] = '"';
        buffer_[t.end - 1] = '"';
        continue;
      }
      // FROM (SELECT ...) without a name: Flink's grammar allows it,
      // PostgreSQL's asks for one; the subquery is named EXPR$n.
      if (t.is_symbol("(") && i > begin && i + 1 < end &&
          (tokens_[i - 1].is_keyword("FROM") || tokens_[i - 1].is_keyword("JOIN")) &&
          (tokens_[i + 1].is_keyword("SELECT") || tokens_[i + 1].is_keyword("WITH") || tokens_[i + 1].is_keyword("VALUES"))) {
        const size_t close = matching(i, end);
        if (close < end && !has_alias(close + 1, end)) {
          inserted_.emplace_back(tokens_[close].end, " AS \"EXPR$" + std::to_string(inserted_.size()) + "\"");
        }
        continue;
      }
      if (t.kind != Token::Kind::kWord) continue;
      // Constructs of Flink's that weir does not run yet, by the words
      // that start them (a column may have such a name: the next token
      // tells).
      const Token& after = i + 1 < end ? tokens_[i + 1] : tokens_.back();
      if (t.is_keyword("MATCH_RECOGNIZE") && after.is_symbol("(")) return unsupported(t, "MATCH_RECOGNIZE");
      if (t.is_keyword("LATERAL") && (after.is_keyword("TABLE") || after.is_symbol("("))) {
        return unsupported(t, "LATERAL TABLE (table functions)");
      }
      if ((t.is_keyword("GROUPING") && after.is_keyword("SETS")) ||
          ((t.is_keyword("CUBE") || t.is_keyword("ROLLUP")) && after.is_symbol("(") && i > begin &&
           (tokens_[i - 1].is_keyword("BY") || tokens_[i - 1].is_symbol(",")))) {
        return unsupported(t, "GROUPING SETS, CUBE and ROLLUP");
      }
      if (t.is_keyword("TABLESAMPLE")) return unsupported(t, "TABLESAMPLE");
      if (t.is_keyword("INSERT") && i + 3 < end && tokens_[i + 1].is_keyword("INTO") && tokens_[i + 3].is_keyword("PARTITION")) {
        return unsupported(tokens_[i + 3], "INSERT INTO ... PARTITION (a static partition)");
      }
      // MAP[k1, v1, ...]: a call map(k1, v1, ...).
      if (t.is_keyword("MAP") && after.is_symbol("[")) {
        int depth = 0;
        size_t close = i + 1;
        for (; close < end; ++close) {
          if (tokens_[close].is_symbol("[")) ++depth;
          if (tokens_[close].is_symbol("]") && --depth == 0) break;
        }
        if (close == end) return error(after, "this '[' is not closed");
        buffer_[after.offset] = '(';
        buffer_[tokens_[close].offset] = ')';
        continue;
      }
      // TRY_CAST(x AS t): PostgreSQL's CAST, the TRY_ blanked (the
      // transformer reads it back from the script's text).
      if (t.is_keyword("TRY_CAST") && after.is_symbol("(")) {
        for (int k = t.offset; k < t.offset + 4; ++k) buffer_[k] = ' ';
        continue;
      }
      // FLOOR(ts TO unit), CEIL(ts TO unit): FLOOR(ts , unit), the unit
      // a bare word the binder reads as one.
      if ((t.is_keyword("FLOOR") || t.is_keyword("CEIL") || t.is_keyword("CEILING")) && after.is_symbol("(")) {
        const size_t close = matching(i + 1, end);
        int depth = 0;
        for (size_t k = i + 1; k < close; ++k) {
          depth += tokens_[k].is_symbol("(") ? 1 : tokens_[k].is_symbol(")") ? -1 : 0;
          if (depth == 1 && tokens_[k].is_keyword("TO") && k + 2 == close && tokens_[k + 1].is(Token::Kind::kWord)) {
            buffer_[tokens_[k].offset] = ',';
            buffer_[tokens_[k].offset + 1] = ' ';
          }
        }
        continue;
      }
      // TABLE(F(...)): a table function's rows.
      if (t.is_keyword("TABLE") && i + 3 < end && tokens_[i + 1].is_symbol("(") && tokens_[i + 2].is(Token::Kind::kWord) &&
          tokens_[i + 3].is_symbol("(")) {
        const size_t close = matching(i + 1, end);
        if (close == end) return error(tokens_[i + 1], "this '(' is not closed");
        blank(i);
        blank(i + 1);
        blank(close);
        const size_t args_end = matching(i + 3, end);
        for (size_t j = i + 4; j < args_end; ++j) {
          if (!tokens_[j].is_keyword("TABLE")) continue;
          if (j + 1 < args_end && (tokens_[j + 1].is(Token::Kind::kWord) || tokens_[j + 1].is(Token::Kind::kIdentifier))) {
            blank(j);
          }
          for (size_t k = j + 1; k < args_end && !tokens_[k].is_symbol(","); ++k) {
            if (!tokens_[k].is_keyword("PARTITION")) continue;
            // SESSION(TABLE t PARTITION BY k | (k, ...), ...): the keys
            // taken out and kept beside the statement.
            if (!tokens_[i + 2].is_keyword("SESSION")) {
              return unsupported(tokens_[k], "PARTITION BY in " + absl::AsciiStrToUpper(tokens_[i + 2].text) +
                                                 " (SESSION takes one)");
            }
            absl::Status s = take_partition(j + 1, k, args_end, st);
            if (!s.ok()) return s;
            break;
          }
        }
        continue;
      }
      // FOR SYSTEM_TIME AS OF x (after a table's name): taken out, kept.
      if (t.is_keyword("FOR") && i + 3 < end && tokens_[i + 1].is_keyword("SYSTEM_TIME") && tokens_[i + 2].is_keyword("AS") &&
          tokens_[i + 3].is_keyword("OF")) {
        if (i == begin) return error(t, "FOR SYSTEM_TIME AS OF follows a table's name");
        size_t j = i + 4;
        // The time: a (qualified) column, or a call such as PROCTIME().
        while (j < end && (tokens_[j].is(Token::Kind::kWord) || tokens_[j].is(Token::Kind::kIdentifier))) {
          ++j;
          if (j < end && tokens_[j].is_symbol(".")) {
            ++j;
            continue;
          }
          if (j < end && tokens_[j].is_symbol("(")) j = matching(j, end) + 1;
          break;
        }
        if (j == i + 4) return error(tokens_[std::min(j, end - 1)], "FOR SYSTEM_TIME AS OF takes a time column");
        st->temporal.push_back({tokens_[i - 1].offset, {tokens_[i + 4].offset, tokens_[j - 1].end}});
        for (size_t k = i; k < j; ++k) blank(k);
        i = j - 1;
        continue;
      }
    }
    return absl::OkStatus();
  }

 private:
  // PARTITION BY at `k` after the table named at `table`: its keys into a
  // PartitionMark, its words blanked.
  absl::Status take_partition(size_t table, size_t k, size_t args_end, Statement* st) {
    PartitionMark mark;
    mark.table_offset = tokens_[table].offset;
    mark.offset = tokens_[k].offset;
    size_t at = k + 1;
    if (at >= args_end || !tokens_[at].is_keyword("BY")) return error(tokens_[std::min(at, args_end - 1)], "PARTITION BY needs BY");
    ++at;
    const bool list = at < args_end && tokens_[at].is_symbol("(");
    size_t last = at;
    for (size_t n = list ? at + 1 : at; n < args_end; n += 2) {  // a name, then a comma
      if (!tokens_[n].is(Token::Kind::kWord) && !tokens_[n].is(Token::Kind::kIdentifier)) {
        return error(tokens_[n], "PARTITION BY takes column names");
      }
      mark.keys.push_back(tokens_[n].is(Token::Kind::kWord) ? absl::AsciiStrToLower(tokens_[n].text) : tokens_[n].text);
      last = n;
      if (!list) break;
      if (n + 1 < args_end && tokens_[n + 1].is_symbol(")")) {
        last = n + 1;
        break;
      }
      if (n + 1 >= args_end || !tokens_[n + 1].is_symbol(",")) return error(tokens_[std::min(n + 1, args_end - 1)], "PARTITION BY (a, b, ...)");
    }
    if (mark.keys.empty()) return error(tokens_[k], "PARTITION BY takes column names");
    for (size_t n = k; n <= last; ++n) blank(n);
    st->partitions.push_back(std::move(mark));
    return absl::OkStatus();
  }

  void blank(size_t i) {
    for (int k = tokens_[i].offset; k < tokens_[i].end; ++k) {
      if (buffer_[k] != '\n') buffer_[k] = ' ';
    }
  }
  // Whether the token at `i` names the relation before it (AS x, or a
  // name that is no clause's keyword).
  bool has_alias(size_t i, size_t end) const {
    if (i >= end) return false;
    const Token& t = tokens_[i];
    if (t.is_keyword("AS") || t.is(Token::Kind::kIdentifier)) return true;
    if (!t.is(Token::Kind::kWord)) return false;
    for (const char* k : {"WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "UNION", "EXCEPT", "INTERSECT", "JOIN", "INNER",
                          "LEFT", "RIGHT", "FULL", "CROSS", "ON", "WINDOW", "OFFSET", "FETCH", "NATURAL", "USING", "FOR"}) {
      if (t.is_keyword(k)) return false;
    }
    return true;
  }

  // The ')' closing the '(' at `open`, or `end`.
  size_t matching(size_t open, size_t end) const {
    int depth = 0;
    for (size_t k = open; k < end; ++k) {
      if (tokens_[k].is_symbol("(")) ++depth;
      if (tokens_[k].is_symbol(")") && --depth == 0) return k;
    }
    return end;
  }
  absl::Status error(const Token& t, const std::string& what) const {
    return absl::InvalidArgumentError(position_of(text_, t.offset) + ": " + what);
  }
  absl::Status unsupported(const Token& t, const std::string& what) const {
    return error(t, what + " is not supported yet (docs/sql.md, \"Flink compatibility\")");
  }

  std::string_view text_;
  const std::vector<Token>& tokens_;
  std::string& buffer_;
  std::vector<std::pair<int, std::string>>& inserted_;
};

// Every "location" (and "stmt_location") in `tree` made `to(location)`.
// Iterative: a tree may be as deep as its text is long.
void remap_locations(nlohmann::json& tree, const std::function<int(int)>& to) {
  std::vector<nlohmann::json*> stack = {&tree};
  while (!stack.empty()) {
    nlohmann::json* n = stack.back();
    stack.pop_back();
    if (n->is_array()) {
      for (auto& x : *n) stack.push_back(&x);
    } else if (n->is_object()) {
      for (auto& [key, value] : n->items()) {
        if ((key == "location" || key == "stmt_location") && value.is_number_integer() && value.get<int>() >= 0) {
          value = to(value.get<int>());
        } else if (value.is_structured()) {
          stack.push_back(&value);
        }
      }
    }
  }
}

// Offsets of a text with insertions made back into offsets of the text
// before them: a position inside an insertion is where it was inserted.
class OffsetMap {
 public:
  // `inserted`: sorted by offset.
  explicit OffsetMap(const std::vector<std::pair<int, std::string>>& inserted) {
    int shift = 0;
    for (const auto& [at, text] : inserted) {
      starts_.push_back({at + shift, at, static_cast<int>(text.size())});
      shift += static_cast<int>(text.size());
    }
  }
  int original(int p) const {
    int shift = 0;
    for (const Insert& i : starts_) {
      if (p < i.start) break;
      if (p < i.start + i.length) return i.at;
      shift += i.length;
    }
    return p - shift;
  }
  // Every "location" (and "stmt_location") in `tree`, made original.
  void remap(nlohmann::json& tree) const {
    remap_locations(tree, [this](int p) { return original(p); });
  }

 private:
  struct Insert {
    int start;   // in the text with insertions
    int at;      // in the original
    int length;
  };
  std::vector<Insert> starts_;
};

// A statement weir knows by its first words but does not run yet.
std::optional<std::string> refused_statement(const std::vector<Token>& tokens, size_t begin, size_t end) {
  auto at = [&](size_t k) -> const Token& { return begin + k < end ? tokens[begin + k] : tokens.back(); };
  const Token& first = at(0);
  if (first.is_keyword("CREATE")) {
    size_t k = 1;
    while (at(k).is_keyword("TEMPORARY") || at(k).is_keyword("SYSTEM") || at(k).is_keyword("OR") || at(k).is_keyword("REPLACE")) ++k;
    for (const char* what : {"FUNCTION", "CATALOG", "DATABASE", "MODEL"}) {
      if (at(k).is_keyword(what)) {
        if (std::string(what) == "FUNCTION") return "CREATE FUNCTION (user-defined functions)";
        return "CREATE " + std::string(what) + " (catalogs and databases)";
      }
    }
    return std::nullopt;
  }
  if (first.is_keyword("DROP")) {
    size_t k = 1;
    while (at(k).is_keyword("TEMPORARY") || at(k).is_keyword("SYSTEM")) ++k;
    if (at(k).is_keyword("FUNCTION")) return "DROP FUNCTION (user-defined functions)";
    if (at(k).is_keyword("CATALOG") || at(k).is_keyword("DATABASE")) return "DROP " + absl::AsciiStrToUpper(at(k).text);
    return std::nullopt;
  }
  if (first.is_keyword("EXPLAIN")) return "EXPLAIN in a script (weir sql --explain FILE shows every INSERT's plan)";
  for (const char* what : {"USE", "LOAD", "UNLOAD", "ANALYZE", "ADD", "REMOVE", "TRUNCATE", "DELETE", "UPDATE", "CALL", "ALTER"}) {
    if (first.is_keyword(what)) {
      std::string words = absl::AsciiStrToUpper(first.text);
      if (at(1).is(Token::Kind::kWord)) words += " " + absl::AsciiStrToUpper(at(1).text);
      return words;
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<Script> parse_script(std::string text) {
  Script script;
  script.text = std::move(text);
  auto tokens = tokenize(script.text);
  if (!tokens.ok()) return tokens.status();
  const std::vector<Token>& tok = *tokens;
  // The text PostgreSQL's parser reads: the queries, translated; the rest
  // blanked (new lines kept, so that lines and columns stay).
  std::string buffer = script.text;
  std::vector<std::pair<int, Statement>> own;  // weir's own statements by offset
  std::vector<Statement> query_parts;          // the queries' marks, in order
  auto blank_range = [&](int from, int to) {
    for (int k = from; k < to; ++k) {
      if (buffer[k] != '\n') buffer[k] = ' ';
    }
  };
  auto refuse = [&](const Token& t, const std::string& what) {
    return absl::InvalidArgumentError(position_of(script.text, t.offset) + ": " + what +
                                      " is not supported yet (docs/sql.md, \"Flink compatibility\")");
  };
  std::vector<std::pair<int, std::string>> inserted;
  Translator translator(script.text, tok, &buffer, &inserted);
  size_t i = 0;
  const size_t n = tok.size() - 1;  // without kEnd
  bool in_set = false;              // inside EXECUTE STATEMENT SET BEGIN ... END
  while (i < n) {
    size_t begin = i;
    // A statement set's start or end: its words are not statements.
    if (tok[begin].is_keyword("EXECUTE") && begin + 3 < n && tok[begin + 1].is_keyword("STATEMENT") &&
        tok[begin + 2].is_keyword("SET") && tok[begin + 3].is_keyword("BEGIN")) {
      if (in_set) return refuse(tok[begin], "a statement set inside a statement set");
      for (size_t k = begin; k < begin + 4; ++k) blank_range(tok[k].offset, tok[k].end);
      in_set = true;
      i = begin + 4;
      continue;
    }
    if (tok[begin].is_keyword("BEGIN") && begin + 2 < n && tok[begin + 1].is_keyword("STATEMENT") && tok[begin + 2].is_keyword("SET")) {
      if (in_set) return refuse(tok[begin], "a statement set inside a statement set");
      for (size_t k = begin; k < begin + 3; ++k) blank_range(tok[k].offset, tok[k].end);
      in_set = true;
      i = begin + 3;
      if (i < n && tok[i].is_symbol(";")) {
        blank_range(tok[i].offset, tok[i].end);
        ++i;
      }
      continue;
    }
    if (tok[begin].is_keyword("END") && (begin + 1 == n || tok[begin + 1].is_symbol(";"))) {
      if (!in_set) return absl::InvalidArgumentError(position_of(script.text, tok[begin].offset) + ": END without a statement set");
      blank_range(tok[begin].offset, tok[begin].end);
      in_set = false;
      i = begin + 1;
      if (i < n) {
        blank_range(tok[i].offset, tok[i].end);
        ++i;
      }
      continue;
    }
    if (tok[begin].is_symbol(";")) {
      ++i;
      continue;
    }
    // EXECUTE INSERT INTO ...: the INSERT.
    if (tok[begin].is_keyword("EXECUTE") && begin + 1 < n && tok[begin + 1].is_keyword("INSERT")) {
      blank_range(tok[begin].offset, tok[begin].end);
      ++begin;
    }
    size_t end = begin;
    while (end < n && !tok[end].is_symbol(";")) ++end;
    i = end < n ? end + 1 : end;
    Statement st;
    st.offset = tok[begin].offset;
    st.text = script.text.substr(st.offset, tok[end - 1].end - st.offset);
    if (in_set && !tok[begin].is_keyword("INSERT")) {
      return absl::InvalidArgumentError(position_of(script.text, st.offset) + ": a statement set holds INSERT statements only");
    }
    if (is_ddl(tok, begin, end)) {
      auto typed = parse_ddl(script.text, tok, begin, end);
      if (!typed.ok()) return typed.status();
      st.typed = *std::move(typed);
      blank_range(tok[begin].offset, end < n ? tok[end].end : static_cast<int>(script.text.size()));
      own.emplace_back(st.offset, std::move(st));
      continue;
    }
    if (auto what = refused_statement(tok, begin, end)) return refuse(tok[begin], *what);
    absl::Status s = translator.translate(begin, end, &st);
    if (!s.ok()) return s;
    query_parts.push_back(std::move(st));
  }
  if (in_set) return absl::InvalidArgumentError("the statement set (EXECUTE STATEMENT SET BEGIN ...) has no END");
  // The insertions, from the last (offsets before them stay).
  for (auto it = inserted.rbegin(); it != inserted.rend(); ++it) buffer.insert(static_cast<size_t>(it->first), it->second);
  const OffsetMap offsets(inserted);
  PgQueryParseResult r = pg_query_parse(buffer.c_str());
  if (r.error != nullptr) {
    // cursorpos counts from 1; 0 means "no position".
    const int at = r.error->cursorpos > 0 ? offsets.original(r.error->cursorpos - 1) : static_cast<int>(script.text.size());
    std::string message = position_of(script.text, at) + ": " + r.error->message;
    pg_query_free_parse_result(r);
    return absl::InvalidArgumentError(message);
  }
  auto tree = nlohmann::json::parse(r.parse_tree, nullptr, /*allow_exceptions=*/false);
  pg_query_free_parse_result(r);
  if (!tree.is_object()) return absl::InternalError("the SQL parser returned an unreadable tree");
  if (!inserted.empty()) offsets.remap(tree);
  std::vector<Statement> queries;
  nlohmann::json none = nlohmann::json::array();
  // Not copied (a copy recurses once per level of a statement's tree).
  nlohmann::json& stmts = tree.contains("stmts") ? tree["stmts"] : none;
  for (auto& s : stmts) {
    Statement st;
    if (!s.contains("stmt")) continue;
    // Where it starts is the split's (below); the nesting error's fallback.
    const int at = s.value("stmt_location", 0);
    st.offset = at;
    if (const int past = past_nesting_limit(s["stmt"]); past != -2) {
      return absl::InvalidArgumentError(position_of(script.text, past >= 0 ? past : at) +
                                        ": the statement nests expressions or queries deeper than " +
                                        std::to_string(kMaxSqlNesting) +
                                        " levels (weir's limit; docs/sql.md \"Limits\")");
    }
    st.query = transform_statement(s["stmt"], script.text);
    queries.push_back(std::move(st));
  }
  // PostgreSQL's statements are the split's queries, one for one, in
  // order: each takes its offset, text and marks from the split.
  if (queries.size() != query_parts.size()) {
    return absl::InternalError("the SQL parser found " + std::to_string(queries.size()) + " queries where weir split " +
                               std::to_string(query_parts.size()));
  }
  for (size_t q = 0; q < queries.size(); ++q) {
    queries[q].offset = query_parts[q].offset;
    queries[q].text = std::move(query_parts[q].text);
    queries[q].temporal = std::move(query_parts[q].temporal);
    queries[q].partitions = std::move(query_parts[q].partitions);
    queries[q].if_not_exists = query_parts[q].if_not_exists;
  }
  // Both kinds in the script's order.
  size_t k = 0;
  for (Statement& q : queries) {
    while (k < own.size() && own[k].first < q.offset) script.statements.push_back(std::move(own[k++].second));
    script.statements.push_back(std::move(q));
  }
  while (k < own.size()) script.statements.push_back(std::move(own[k++].second));
  return script;
}

absl::StatusOr<ast::Expr> parse_expression(const Script& script, ast::ExprText span) {
  constexpr std::string_view kSelect = "SELECT ";
  if (span.begin < 0 || span.end > static_cast<int>(script.text.size()) || span.begin >= span.end) {
    return absl::InternalError("an expression's span outside its script");
  }
  // "SELECT " and the expression's text, backquotes made double quotes;
  // locations shifted back to the script's (a span starts at a token).
  const std::string_view piece = std::string_view(script.text).substr(span.begin, span.end - span.begin);
  auto tokens = tokenize(piece);
  if (!tokens.ok()) return absl::InternalError("an expression's span does not start at a token");
  std::string buffer = std::string(kSelect) + std::string(piece);
  for (const Token& t : *tokens) {
    if (t.is(Token::Kind::kIdentifier) && piece[t.offset] == '`') {
      buffer[kSelect.size() + t.offset] = '"';
      buffer[kSelect.size() + t.end - 1] = '"';
    }
  }
  const int shift = span.begin - static_cast<int>(kSelect.size());
  auto in_script = [&](int p) { return std::clamp(p + shift, span.begin, span.end); };
  PgQueryParseResult r = pg_query_parse(buffer.c_str());
  if (r.error != nullptr) {
    const int at = r.error->cursorpos > 0 ? in_script(r.error->cursorpos - 1) : span.end;
    std::string message = position_of(script.text, at) + ": " + r.error->message;
    pg_query_free_parse_result(r);
    return absl::InvalidArgumentError(message);
  }
  auto tree = nlohmann::json::parse(r.parse_tree, nullptr, /*allow_exceptions=*/false);
  pg_query_free_parse_result(r);
  if (tree.is_object()) remap_locations(tree, in_script);
  // One SELECT of one bare expression: a FROM, a second statement or a
  // clause in the span is not an expression.
  const nlohmann::json* target = nullptr;
  if (tree.is_object() && tree.contains("stmts") && tree["stmts"].size() == 1 && tree["stmts"][0]["stmt"].contains("SelectStmt")) {
    const nlohmann::json& select = tree["stmts"][0]["stmt"]["SelectStmt"];
    const bool bare = !select.contains("fromClause") && !select.contains("whereClause") && !select.contains("groupClause") &&
                      !select.contains("distinctClause");
    if (bare && select.contains("targetList") && select["targetList"].size() == 1) {
      const nlohmann::json& res = select["targetList"][0];
      if (res.contains("ResTarget") && res["ResTarget"].contains("val") && !res["ResTarget"].contains("name")) {
        target = &res["ResTarget"]["val"];
      }
    }
  }
  if (target == nullptr) return absl::InvalidArgumentError(position_of(script.text, span.begin) + ": not an expression");
  if (const int past = past_nesting_limit(*target); past != -2) {
    return absl::InvalidArgumentError(position_of(script.text, past >= 0 ? past : span.begin) +
                                      ": the expression nests deeper than " + std::to_string(kMaxSqlNesting) + " levels");
  }
  return transform_expression(*target, script.text);
}

}  // namespace weir::sql
