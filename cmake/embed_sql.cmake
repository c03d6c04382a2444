# Writes OUT, a C++ file defining weir::nexmark::query_sql() and
# sql_queries() over the texts of DIR/q*.sql, and tables_sql() over
# DIR/tables.sql (run at build time, so an edited .sql file rebuilds).
file(GLOB files ${DIR}/q*.sql)
list(SORT files COMPARE NATURAL)
set(entries "")
set(names "")
foreach(f ${files})
  get_filename_component(q ${f} NAME_WE)
  file(READ ${f} text)
  string(APPEND entries "      {\"${q}\", R\"weir_sql(${text})weir_sql\"},\n")
  string(APPEND names "\"${q}\", ")
endforeach()
file(READ ${DIR}/tables.sql tables)
file(WRITE ${OUT}.tmp "// Generated from examples/nexmark/sql/*.sql by cmake/embed_sql.cmake.
#include <map>
#include <string>
#include <vector>

namespace weir::nexmark {

const std::string* query_sql(const std::string& query) {
  static const std::map<std::string, std::string> kTexts = {
${entries}  };
  auto it = kTexts.find(query);
  return it == kTexts.end() ? nullptr : &it->second;
}

std::vector<std::string> sql_queries() { return {${names}}; }

const std::string& tables_sql() {
  static const std::string kTables = R\"weir_sql(${tables})weir_sql\";
  return kTables;
}

}  // namespace weir::nexmark
")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
