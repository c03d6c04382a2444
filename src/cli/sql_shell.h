// `weir sql` without a script: an interactive shell. Statements end with
// ';' and may span lines. CREATE TABLE, CREATE VIEW and SET declare (DROP
// TABLE and DROP VIEW forget) for the statements after them; a SELECT runs as a
// job of its own with the job flags given to `weir sql` (embedded, or on the
// cluster of `--jobmanager`), and shows its result as a table: a bounded query's once it finished, a
// streaming one's as it changes (redrawn in place on a terminal, a new
// table per change otherwise) until the job ends or Ctrl-C cancels it. An
// updating result shows the table its changelog leaves. The SELECT's
// ORDER BY (result columns by name or position) and LIMIT order and cut
// what is shown; a LIMIT without ORDER BY over an append-only result ends
// the job once that many rows came. INSERT INTO runs as `weir sql FILE`
// runs it (on a cluster: submitted, left running); EXPLAIN prints a plan; SHOW TABLES, DESCRIBE t, HELP and QUIT
// do what they say. An error is one line, and the shell goes on.
#ifndef WEIR_CLI_SQL_SHELL_H_
#define WEIR_CLI_SQL_SHELL_H_

#include <istream>
#include <string>
#include <vector>

#include "cli/jobs.h"
#include "cluster/client.h"

namespace weir::cli {

// Reads statements from `in` until its end or QUIT; `interactive`: prompt
// and redraw in place (a terminal). Returns the exit code: 0, or 2 when the
// job flags are wrong.
int run_sql_shell(const JobFlags& flags, std::istream& in, bool interactive);

// The shell with its queries on the cluster `client` reaches: a SELECT runs
// as the built-in job `sql` with `job_args` (the job flags given to the
// shell), its rows read through the JobManager (cli/sql_collect.h); an
// INSERT is submitted and runs on after its job id is printed.
int run_sql_shell_on_cluster(cluster::ClusterClient& client, const std::vector<std::string>& job_args,
                             std::istream& in, bool interactive);

}  // namespace weir::cli

#endif  // WEIR_CLI_SQL_SHELL_H_
