// Tokens of Flink's SQL dialect (and of the PostgreSQL spellings weir has
// always taken beside it): words, `backquoted` and "double-quoted"
// identifiers, 'string' literals ('' inside is one quote), numbers and
// punctuation, each with its byte offset into the script. Comments (-- to
// the end of the line, /* ... */) are skipped; a hint (/*+ ... */) is a
// token of its own, so that the parser can refuse it by name.
//
// Thread-compatible; a Lexer reads a string it does not own.
#ifndef WEIR_SQL_LEXER_H_
#define WEIR_SQL_LEXER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace weir::sql {

struct Token {
  enum class Kind : uint8_t {
    kWord,        // an unquoted identifier or keyword
    kIdentifier,  // a quoted identifier: `x` or "x"
    kString,      // 'text'
    kNumber,      // 12, 1.5, .5, 1e3
    kSymbol,      // ( ) , ; . = < > <= >= <> != => || + - * / % :: [ ] { } ? ! ~ ^ & | :
    kHint,        // /*+ ... */
    kEnd,
  };
  Kind kind = Kind::kEnd;
  int offset = 0;  // of the token's first byte
  int end = 0;     // one past its last byte
  // kWord: as written; kIdentifier and kString: unquoted (doubled quotes
  // made single); kNumber and kSymbol: as written.
  std::string text;

  bool is(Kind k) const { return kind == k; }
  // A word equal to `keyword` (ASCII upper case), in any case.
  bool is_keyword(std::string_view keyword) const;
  bool is_symbol(std::string_view s) const { return kind == Kind::kSymbol && text == s; }
};

// The tokens of `text`, ending with one kEnd at text.size(). An
// unterminated quote or comment is an InvalidArgument error naming its line
// and column.
absl::StatusOr<std::vector<Token>> tokenize(std::string_view text);

}  // namespace weir::sql

#endif  // WEIR_SQL_LEXER_H_
