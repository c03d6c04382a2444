// The typed syntax of the statements weir parses itself, in Flink's
// dialect: CREATE TABLE (with its options, computed and metadata columns,
// WATERMARK FOR, PRIMARY KEY ... NOT ENFORCED, PARTITIONED BY, LIKE), SET,
// RESET, DROP, ALTER TABLE ... SET/RESET and the statements an interactive
// client reads (SHOW, DESCRIBE). Made by the dialect parser (sql/parser.h);
// read by the planner. Every node keeps the byte offset of its text in the
// script, for errors.
//
// An expression inside a declaration (a computed column, a watermark) is
// kept as the span of its text; the planner binds it as it binds a query's.
#ifndef WEIR_SQL_AST_H_
#define WEIR_SQL_AST_H_

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace weir::sql::ast {

// A name as written: `quoted` keeps its case (backquotes or double
// quotes); an unquoted name is folded to lower case, as the query parser
// folds it.
struct Name {
  std::string text;
  int offset = 0;
};

// A data type: its name in upper case ("BIGINT", "DECIMAL", "ROW",
// "ARRAY", ...), its numbers (VARCHAR(10): {10}; DECIMAL(23, 3): {23, 3}),
// its element or field types (ARRAY<T>: one; MAP<K, V>: two; ROW: one per
// field, with `field_names`), and NOT NULL.
struct DataType {
  std::string name;
  int offset = 0;
  std::vector<int> params;
  std::vector<DataType> elements;
  std::vector<Name> field_names;  // ROW only
  bool not_null = false;
  // TIMESTAMP WITH LOCAL TIME ZONE is "TIMESTAMP_LTZ"; WITH TIME ZONE is
  // refused by the parser.
};

// The span [begin, end) of an expression's text in the script.
struct ExprText {
  int begin = 0;
  int end = 0;
};

struct ColumnDef {
  enum class Kind : uint8_t { kPhysical, kComputed, kMetadata };
  Kind kind = Kind::kPhysical;
  Name name;
  DataType type;                    // kPhysical, kMetadata
  ExprText expr;                    // kComputed
  std::optional<std::string> from;  // kMetadata: METADATA FROM 'key'
  bool is_virtual = false;          // kMetadata: VIRTUAL
  bool primary_key = false;         // `c T PRIMARY KEY [NOT ENFORCED]`
};

struct Option {
  std::string key;  // lower case
  std::string value;
  int offset = 0;  // of the key
};

struct Watermark {
  Name column;
  ExprText expr;
  int offset = 0;  // of WATERMARK
};

struct CreateTable {
  Name name;
  int offset = 0;  // of CREATE
  bool temporary = false;
  bool if_not_exists = false;
  std::vector<ColumnDef> columns;
  std::optional<Watermark> watermark;
  std::vector<Name> primary_key;  // the table constraint's columns
  std::vector<Name> partitioned_by;
  std::vector<Option> options;
  // LIKE source [(INCLUDING | EXCLUDING | OVERWRITING ALL | OPTIONS | ...)]
  std::optional<Name> like;
  struct LikeOption {
    std::string how;   // "INCLUDING", "EXCLUDING", "OVERWRITING"
    std::string what;  // "ALL", "OPTIONS", "WATERMARKS", "GENERATED", "METADATA", "CONSTRAINTS", "PARTITIONS"
  };
  std::vector<LikeOption> like_options;
};

// SET 'key' = 'value' (SET "key" = value, SET key = value); SET alone
// lists the settings.
struct Set {
  std::optional<Option> option;
};

// RESET 'key'; RESET alone resets every setting.
struct Reset {
  std::optional<Name> key;
};

// DROP [TEMPORARY] TABLE | VIEW [IF EXISTS] name
struct Drop {
  bool view = false;
  bool if_exists = false;
  Name name;
};

// ALTER TABLE name SET ('k' = 'v', ...) | RESET ('k', ...) | RENAME TO new
struct AlterTable {
  Name name;
  std::vector<Option> set;
  std::vector<Name> reset;
  std::optional<Name> rename_to;
};

// SHOW TABLES | VIEWS | CREATE TABLE t | CREATE VIEW v; DESCRIBE t
struct Show {
  enum class What : uint8_t { kTables, kViews, kCreateTable, kCreateView, kDescribe };
  What what = What::kTables;
  std::optional<Name> name;
};

using Statement = std::variant<CreateTable, Set, Reset, Drop, AlterTable, Show>;

}  // namespace weir::sql::ast

#endif  // WEIR_SQL_AST_H_
