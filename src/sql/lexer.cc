#include "sql/lexer.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "sql/parser.h"

namespace weir::sql {

bool Token::is_keyword(std::string_view keyword) const {
  if (kind != Kind::kWord || text.size() != keyword.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (absl::ascii_toupper(static_cast<unsigned char>(text[i])) != absl::ascii_toupper(static_cast<unsigned char>(keyword[i]))) {
      return false;
    }
  }
  return true;
}

namespace {

bool word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80) != 0; }
bool word_char(char c) { return word_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '$'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

absl::StatusOr<std::vector<Token>> tokenize(std::string_view text) {
  std::vector<Token> out;
  const size_t n = text.size();
  size_t i = 0;
  auto error = [&](size_t at, const std::string& what) {
    return absl::InvalidArgumentError(position_of(text, static_cast<int>(at)) + ": " + what);
  };
  while (i < n) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '-' && i + 1 < n && text[i + 1] == '-') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      const size_t close = text.find("*/", i + 2);
      if (close == std::string_view::npos) return error(i, "a comment /* ... is not closed");
      if (i + 2 < n && text[i + 2] == '+') {
        out.push_back({Token::Kind::kHint, static_cast<int>(i), static_cast<int>(close + 2),
                       std::string(text.substr(i, close + 2 - i))});
      }
      i = close + 2;
      continue;
    }
    Token t;
    t.offset = static_cast<int>(i);
    if (c == '\'' || c == '`' || c == '"') {
      t.kind = c == '\'' ? Token::Kind::kString : Token::Kind::kIdentifier;
      size_t j = i + 1;
      for (;;) {
        if (j >= n) {
          return error(i, c == '\'' ? "a string '... is not closed" : std::string("an identifier ") + c + "... is not closed");
        }
        if (text[j] == c) {
          if (j + 1 < n && text[j + 1] == c) {  // doubled: one of it
            t.text += c;
            j += 2;
            continue;
          }
          break;
        }
        t.text += text[j++];
      }
      if (t.kind == Token::Kind::kIdentifier && t.text.empty()) return error(i, "an empty quoted identifier");
      i = j + 1;
    } else if (word_start(c)) {
      size_t j = i;
      while (j < n && word_char(text[j])) ++j;
      t.kind = Token::Kind::kWord;
      t.text = std::string(text.substr(i, j - i));
      i = j;
    } else if (digit(c) || (c == '.' && i + 1 < n && digit(text[i + 1]))) {
      size_t j = i;
      while (j < n && digit(text[j])) ++j;
      if (j < n && text[j] == '.') {
        ++j;
        while (j < n && digit(text[j])) ++j;
      }
      if (j < n && (text[j] == 'e' || text[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (text[k] == '+' || text[k] == '-')) ++k;
        if (k < n && digit(text[k])) {
          j = k;
          while (j < n && digit(text[j])) ++j;
        }
      }
      t.kind = Token::Kind::kNumber;
      t.text = std::string(text.substr(i, j - i));
      i = j;
    } else {
      static constexpr std::string_view kTwo[] = {"<=", ">=", "<>", "!=", "=>", "||", "::"};
      t.kind = Token::Kind::kSymbol;
      t.text = std::string(1, c);
      for (std::string_view two : kTwo) {
        if (text.substr(i, 2) == two) t.text = std::string(two);
      }
      static constexpr std::string_view kOne = "(),;.=<>+-*/%[]{}?!~^&|:";
      if (t.text.size() == 1 && kOne.find(c) == std::string_view::npos) {
        return error(i, std::string("unexpected character '") + c + "'");
      }
      i += t.text.size();
    }
    t.end = static_cast<int>(i);
    out.push_back(std::move(t));
  }
  out.push_back({Token::Kind::kEnd, static_cast<int>(n), static_cast<int>(n), ""});
  return out;
}

}  // namespace weir::sql
