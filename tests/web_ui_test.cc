// The web UI in a real browser (headless Chromium through ChromeDriver)
// against a real cluster running real jobs: the login, the overview, a
// job's graph, metrics that move, checkpoints, exceptions, and the stop
// button ending the job with a savepoint. With WEIR_SCREENSHOT_DIR set, the
// screenshots go there (docs/web-ui/ holds the ones the docs show).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/str_join.h"
#include "tests/cluster.h"
#include "tests/webdriver.h"

namespace weir::testing {
namespace {

std::string job_of(const RunResult& r) {
  size_t at = r.out.find("submitted job ");
  if (at == std::string::npos) return "";
  std::string id = r.out.substr(at + 14);
  return id.substr(0, id.find('\n'));
}

int64_t digits_of(const std::string& text) {
  std::string d;
  for (char c : text) {
    if (c >= '0' && c <= '9') d += c;
  }
  return d.empty() ? -1 : std::stoll(d);
}

// The console and network log's errors (level SEVERE), one per line.
// The browser's errors, but for requests it aborted because this host's
// addresses changed (ERR_NETWORK_CHANGED): tests running beside this one
// add and remove interfaces (tests/netns_hosts.h), and the pages poll
// again on their next tick, which the assertions on what they show cover.
std::string errors_in(const nlohmann::json& log) {
  std::string out;
  if (!log.is_array()) return "the browser's log could not be read: " + log.dump();
  for (const auto& e : log) {
    const std::string message = e.value("message", "");
    if (e.value("level", "") != "SEVERE" || message.find("net::ERR_NETWORK_CHANGED") != std::string::npos) continue;
    out += message + "\n";
  }
  return out;
}

bool is_png(const std::string& path) {
  std::string head = slurp(path).substr(0, 8);
  return head == std::string("\x89PNG\r\n\x1a\n", 8);
}

TEST(WebUiTest, ShowsTheClusterAndAJobAndStopsItWithASavepoint) {
  Cluster c("web-ui");
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  const std::string base = (tls_mode() ? "https://" : "http://") + c.rest();
  const char* shots_env = std::getenv("WEIR_SCREENSHOT_DIR");
  const std::string shots = shots_env != nullptr ? shots_env : c.dir().path("screenshots");
  std::filesystem::create_directories(shots);

  // A job that fails once, restarts and ends; one that runs until stopped.
  RunResult ended = run_weir({"run", "--detached", "--jobmanager", c.rest(), "--secret-file", c.secret_file(),
                              "nexmark", "--query", "q5", "--events", "60000", "--rate", "20000", "--fail-every",
                              "20000", "-p", "2", "--checkpoint-dir", c.dir().path("chk-ended"),
                              "--checkpoint-interval", "300ms"},
                             c.dir().path("submit-ended"));
  ASSERT_EQ(ended.code, 0) << ended.err;
  const std::string ended_id = job_of(ended);
  auto ended_job = c.client().wait(ended_id, 60000);
  ASSERT_TRUE(ended_job.ok()) << ended_job.status();
  ASSERT_EQ((*ended_job)["status"], "FINISHED") << *ended_job;
  RunResult running = run_weir({"run", "--detached", "--jobmanager", c.rest(), "--secret-file", c.secret_file(),
                                "nexmark", "--query", "q5", "--events", "1000000000", "--rate", "20000", "-p", "2",
                                "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval", "500ms"},
                               c.dir().path("submit"));
  ASSERT_EQ(running.code, 0) << running.err;
  const std::string job = job_of(running);

  // Without a session the UI sends the browser to the login page and the
  // API refuses.
  {
    auto raw_client = http_client(c.rest());
    httplib::Client& raw = *raw_client;
    auto page = raw.Get("/ui/");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 303);
    EXPECT_EQ(page->get_header_value("Location"), "/ui/login");
    auto jobs = raw.Get("/v1/jobs");
    ASSERT_TRUE(jobs);
    EXPECT_EQ(jobs->status, 401);
  }

  WebDriver b(c.dir().path("chromedriver"));
  ASSERT_TRUE(b.error().empty()) << b.error();
  b.go(base + "/ui/");
  EXPECT_TRUE(eventually([&] { return b.url() == base + "/ui/login"; }, 20s)) << b.url();
  b.type("#secret", "not-the-cluster-secret");
  ASSERT_TRUE(b.click("#sign-in"));
  ASSERT_NE(b.await("#login-error"), "") << "a wrong secret is not refused";
  EXPECT_EQ(b.text("#login-error"), "That is not the cluster secret.");
  ASSERT_TRUE(b.screenshot(shots + "/login.png"));
  b.log();  // the refused login's 401 is expected; nothing after it is
  b.type("#secret", c.secret());
  ASSERT_TRUE(b.click("#sign-in"));
  EXPECT_TRUE(eventually([&] { return b.url().rfind(base + "/ui/", 0) == 0 && b.find("#login-error").empty(); }, 20s));

  // The overview: both TaskManagers, both jobs.
  ASSERT_TRUE(eventually(
      [&] {
        const std::string tms = b.text("#s-taskmanagers"), jobs = b.text("#s-jobs");
        return tms.find("tm-a") != std::string::npos && tms.find("tm-b") != std::string::npos &&
               jobs.find(job) != std::string::npos && jobs.find(ended_id) != std::string::npos;
      },
      30s))
      << b.text("#app");
  EXPECT_EQ(b.text("#taskmanager-count"), "2");
  ASSERT_TRUE(b.screenshot(shots + "/overview.png"));
  EXPECT_TRUE(is_png(shots + "/overview.png"));

  // A TaskManager's page: what it uses, the subtasks in its slots (as the
  // REST API places them), its configuration and its log, which follows.
  ASSERT_TRUE(b.click("#s-taskmanagers a[href='#/taskmanagers/tm-a']"));
  auto tm = c.client().get("/v1/taskmanagers/tm-a");
  ASSERT_TRUE(tm.ok()) << tm.status();
  ASSERT_TRUE(eventually(
      [&] {
        tm = c.client().get("/v1/taskmanagers/tm-a");
        return tm.ok() && !(*tm)["subtasks"].empty() &&
               b.run("return document.querySelectorAll('#tm-subtasks tbody tr').length;") ==
                   static_cast<int>((*tm)["subtasks"].size());
      },
      30s))
      << b.text("#app") << "\n" << (tm.ok() ? tm->dump() : tm.status().ToString());
  EXPECT_EQ(b.text("#tm-slots"), std::to_string((*tm)["slots_used"].get<int>()) + " / 2");
  EXPECT_NE(b.text("#tm-config").find("network_buffers"), std::string::npos) << b.text("#tm-config");
  EXPECT_NE(b.text("#tm-config").find("tm-a"), std::string::npos) << b.text("#tm-config");
  EXPECT_EQ(b.text("#tm-config").find(c.secret()), std::string::npos) << "the secret is on the page";
  ASSERT_TRUE(eventually([&] { return b.text("#log-view").find("registered at the JobManager") != std::string::npos; },
                         20s))
      << b.text("#log-view");
  ASSERT_TRUE(b.click("#log-download"));
  EXPECT_TRUE(eventually([&] { return b.run("return Number(document.getElementById('log-download').dataset.lines || 0);") > 0; },
                         20s));
  // The log through the REST API: bounded pieces, numbered lines.
  auto piece = c.client().get("/v1/taskmanagers/tm-a/log?offset=0&length=3");
  ASSERT_TRUE(piece.ok()) << piece.status();
  EXPECT_LE((*piece)["lines"].size(), 3u) << *piece;
  EXPECT_GE((*piece)["next"].get<int64_t>(), (*piece)["first"].get<int64_t>());
  auto too_long = c.client().get("/v1/taskmanagers/tm-a/log?length=100000");
  EXPECT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("not between 1 and 1000"), std::string::npos) << too_long.status();
  ASSERT_TRUE(b.screenshot(shots + "/taskmanager.png", 1800));

  // The JobManager's page: its configuration and log.
  ASSERT_TRUE(b.click("#nav-jobmanager"));
  ASSERT_TRUE(eventually([&] { return b.text("#jm-config").find("rest_port") != std::string::npos; }, 20s))
      << b.text("#app");
  EXPECT_NE(b.text("#jm-config").find(c.rest().substr(c.rest().rfind(':') + 1)), std::string::npos)
      << b.text("#jm-config");
  ASSERT_TRUE(eventually([&] { return b.text("#log-view").find("submitted") != std::string::npos; }, 20s))
      << b.text("#log-view");
  // Following: lines logged since (a checkpoint completes every 500 ms)
  // show up without reloading.
  auto shown_up_to = [&] {
    const std::string status = b.text("#log-status");
    const size_t at = status.find("up to line");
    return at == std::string::npos ? int64_t{-1} : digits_of(status.substr(at));
  };
  const int64_t shown = shown_up_to();
  ASSERT_GT(shown, 0) << b.text("#log-status");
  EXPECT_TRUE(eventually([&] { return shown_up_to() > shown; }, 20s)) << b.text("#log-status");
  ASSERT_TRUE(b.screenshot(shots + "/jobmanager.png", 1400));
  ASSERT_TRUE(b.click("#nav-overview"));

  // The session is an HttpOnly cookie: it reads the API, but a change needs
  // the UI's header too (a page of another site cannot send it).
  {
    EXPECT_EQ(b.run("return document.cookie;"), "") << "the session cookie is readable by scripts";
    const std::string session = b.cookie("weir_session");
    ASSERT_EQ(session.size(), 64u) << session;
    auto raw_client = http_client(c.rest());
    httplib::Client& raw = *raw_client;
    auto list = raw.Get("/v1/jobs", {{"Cookie", "weir_session=" + session}});
    ASSERT_TRUE(list);
    EXPECT_EQ(list->status, 200) << list->body;
    auto forged = raw.Post("/v1/jobs/" + job + "/cancel", {{"Cookie", "weir_session=" + session}}, "", "text/plain");
    ASSERT_TRUE(forged);
    EXPECT_EQ(forged->status, 401) << forged->body;
    auto still = c.client().job(job);
    ASSERT_TRUE(still.ok());
    EXPECT_EQ((*still)["status"], "RUNNING") << *still;
  }

  // The job's page: its graph as the REST API has it.
  ASSERT_TRUE(b.click("tr[data-job='" + job + "'] a"));
  auto detail = c.client().job(job);
  ASSERT_TRUE(detail.ok()) << detail.status();
  const size_t vertices = (*detail)["vertices"].size(), edges = (*detail)["edges"].size();
  ASSERT_GE(vertices, 3u) << *detail;
  ASSERT_TRUE(eventually(
      [&] {
        return b.run("return document.querySelectorAll('#s-graph g.vertex').length;") == vertices &&
               b.run("return document.querySelectorAll('#s-graph g.edge').length;") == edges;
      },
      20s))
      << b.text("#s-graph");
  nlohmann::json names = b.run("return [...document.querySelectorAll('#s-graph g.vertex > title')].map(t => t.textContent);");
  for (const auto& v : (*detail)["vertices"]) {
    EXPECT_NE(std::find(names.begin(), names.end(), v["name"]), names.end()) << v["name"] << " not drawn: " << names;
  }
  EXPECT_NE(b.text("#s-graph").find("HASH"), std::string::npos) << b.text("#s-graph");

  // Numbers move between two refreshes; checkpoints are listed and charted.
  const std::string source_out = "#vertices tr[data-vertex='0'] td[data-metric='records_out']";
  int64_t first = -1;
  ASSERT_TRUE(eventually([&] { return (first = digits_of(b.text(source_out))) > 0; }, 30s)) << b.text("#vertices");
  EXPECT_TRUE(eventually([&] { return digits_of(b.text(source_out)) > first; }, 30s)) << first;
  ASSERT_TRUE(eventually([&] { return digits_of(b.text("#checkpoints-completed")) >= 2; }, 30s))
      << b.text("#s-checkpoints");
  EXPECT_NE(b.find("#checkpoints tbody tr"), "");
  EXPECT_EQ(b.run("return document.querySelectorAll('#s-checkpoints .chart').length;"), 2);
  // A checkpoint's subtasks: one row per subtask of the job, each named by
  // its vertex.
  int subtasks = 0;
  for (const auto& v : (*detail)["vertices"]) subtasks += v["parallelism"].get<int>();
  ASSERT_TRUE(b.click("#checkpoints tbody tr"));
  ASSERT_TRUE(eventually(
      [&] { return b.run("return document.querySelectorAll('#checkpoint-detail tbody tr').length;") == subtasks; },
      10s))
      << b.text("#s-checkpoint-detail");
  EXPECT_NE(b.text("#checkpoint-detail").find((*detail)["vertices"][0]["name"].get<std::string>()), std::string::npos)
      << b.text("#checkpoint-detail");
  // Each subtask's state size; together the checkpoint's, as the REST API
  // gives it.
  {
    const std::string title = b.text("#checkpoint-detail-title");  // "Checkpoint N: M subtasks"
    const int64_t shown_id = std::stoll(title.substr(title.find(' ') + 1));
    const int64_t summed = b.run(
        "return [...document.querySelectorAll('#checkpoint-detail td[data-state-bytes]')]"
        ".reduce((s, td) => s + Number(td.dataset.stateBytes), 0);");
    auto cps = c.client().checkpoints(job);
    ASSERT_TRUE(cps.ok()) << cps.status();
    int64_t expected = -1;
    for (const auto& cp : (*cps)["completed"]) {
      if (cp["id"].get<int64_t>() == shown_id) expected = cp["state_bytes"].get<int64_t>();
    }
    EXPECT_GT(summed, 0);
    EXPECT_EQ(summed, expected) << title;
  }
  // The subtasks of a vertex, with where each runs.
  ASSERT_TRUE(b.click("#vertices tr[data-vertex='1']"));
  EXPECT_TRUE(eventually([&] { return b.text("#s-subtasks-title") == "Subtasks of " + (*detail)["vertices"][1]["name"].get<std::string>(); }, 10s))
      << b.text("#s-subtasks-title");
  EXPECT_TRUE(eventually(
      [&] {
        const std::string t = b.text("#subtasks");
        return t.find("tm-a") != std::string::npos || t.find("tm-b") != std::string::npos;
      },
      10s))
      << b.text("#subtasks");
  // What the job was submitted with.
  EXPECT_NE(b.text("#job-args").find("--checkpoint-interval"), std::string::npos) << b.text("#job-config");
  ASSERT_TRUE(b.screenshot(shots + "/job.png", 2300));

  // The ended job's exceptions: the injected failure and what restarted.
  auto ended_detail = c.client().job(ended_id);
  ASSERT_TRUE(ended_detail.ok());
  const size_t failures = (*ended_detail)["failures"].size();
  ASSERT_GE(failures, 1u) << *ended_detail;
  b.go(base + "/ui/#/jobs/" + ended_id);
  ASSERT_TRUE(eventually(
      [&] { return b.run("return document.querySelectorAll('#exceptions tbody tr').length;") == failures; }, 20s))
      << b.text("#s-exceptions");
  EXPECT_NE(b.text("#exceptions").find("injected failure"), std::string::npos) << b.text("#exceptions");
  // Grouped by cause: causes that differ only in their numbers are one
  // row, with how many (counted here from the REST API's failures).
  std::map<std::string, int> kinds;
  for (const auto& f : (*ended_detail)["failures"]) {
    std::string kind;
    bool in_number = false;
    for (char ch : f["cause"].get<std::string>()) {
      const bool digit = ch >= '0' && ch <= '9';
      if (!digit) kind += ch;
      if (digit && !in_number) kind += 'N';
      in_number = digit;
    }
    ++kinds[kind];
  }
  EXPECT_EQ(b.run("return document.querySelectorAll('#exception-groups tbody tr').length;"), kinds.size())
      << b.text("#exception-groups");
  int counted = 0;
  for (size_t row = 1; row <= kinds.size(); ++row) {
    counted += static_cast<int>(
        digits_of(b.text("#exception-groups tbody tr:nth-child(" + std::to_string(row) + ") td[data-count]")));
  }
  EXPECT_EQ(counted, static_cast<int>(failures)) << b.text("#exception-groups");
  EXPECT_EQ(b.find("#action-stop"), "") << "an ended job offers to stop";
  ASSERT_TRUE(b.screenshot(shots + "/job-ended.png", 2300));

  // Stop with a savepoint: asked first, then done.
  b.go(base + "/ui/#/jobs/" + job);
  ASSERT_TRUE(b.click("#action-stop"));
  ASSERT_NE(b.await("#confirm"), "");
  ASSERT_TRUE(b.click("#confirm-yes"));
  ASSERT_TRUE(eventually([&] { return b.text("#notice").rfind("Stopped with savepoint", 0) == 0; }, 60s))
      << b.text("#s-head");
  auto stopped = c.client().wait(job, 30000);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ((*stopped)["status"], "FINISHED") << *stopped;
  const std::string savepoint = (*stopped)["stopped_with_savepoint"];
  EXPECT_TRUE(std::filesystem::exists(savepoint)) << savepoint;
  EXPECT_NE(b.text("#notice").find(savepoint), std::string::npos) << b.text("#notice");
  EXPECT_TRUE(eventually([&] { return b.text("#job-name").find("FINISHED") != std::string::npos; }, 10s));

  // No console or network errors on any page since the login.
  EXPECT_EQ(errors_in(b.log()), "");

  // Signing out ends the session: the cookie no longer reads the API.
  const std::string session = b.cookie("weir_session");
  ASSERT_TRUE(b.click("#logout"));
  EXPECT_TRUE(eventually([&] { return b.url() == base + "/ui/login"; }, 20s)) << b.url();
  auto raw_client = http_client(c.rest());
  httplib::Client& raw = *raw_client;
  auto after = raw.Get("/v1/jobs", {{"Cookie", "weir_session=" + session}});
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 401);
}

// The SQL page: a script is explained (an error selects its place, a plan
// shows), submitted as the built-in job sql, and the job's page names its
// operators after the query; what its print sink writes shows on the
// TaskManager's page under Stdout, read from the file the TaskManager's
// output goes to.
TEST(WebUiTest, SqlPageExplainsAndSubmitsAScriptWhoseOutputTheTaskManagerShows) {
  Cluster c("web-ui-sql");
  ASSERT_TRUE(c.start({{"tm-a", 2}})) << "the cluster did not come up\n" << c.jm_log();
  const std::string base = (tls_mode() ? "https://" : "http://") + c.rest();
  const char* shots_env = std::getenv("WEIR_SCREENSHOT_DIR");
  const std::string shots = shots_env != nullptr ? shots_env : c.dir().path("screenshots");
  std::filesystem::create_directories(shots);
  WebDriver b(c.dir().path("chromedriver"));
  ASSERT_TRUE(b.error().empty()) << b.error();
  b.go(base + "/ui/login");
  b.type("#secret", c.secret());
  ASSERT_TRUE(b.click("#sign-in"));
  ASSERT_TRUE(eventually([&] { return b.url().rfind(base + "/ui/", 0) == 0 && b.url() != base + "/ui/login"; }, 20s));

  ASSERT_TRUE(b.click("#nav-sql"));
  ASSERT_NE(b.await("#sql-script"), "");
  auto set_script = [&](const std::string& text) {
    b.run("document.getElementById('sql-script').value = arguments[0];", nlohmann::json::array({text}));
  };
  // A misspelled keyword: the error names line and column, and the editor
  // selects that place.
  set_script("CREATE TABLE t (x BIGINT) WITH ('connector' = 'values', 'rows' = '1');\nSELEC x FROM t;\n");
  ASSERT_TRUE(b.click("#sql-explain"));
  ASSERT_NE(b.await("#sql-error"), "") << b.text("#s-sql-result");
  EXPECT_NE(b.text("#sql-error").find("line 2, column 1"), std::string::npos) << b.text("#sql-error");
  EXPECT_EQ(b.run("return document.getElementById('sql-script').selectionStart;"), 71);

  const std::string script =
      "CREATE TABLE bids (auction BIGINT, price BIGINT) WITH ('connector' = 'values', 'rows' = '\n"
      "1,10\n2,20\n1,30\n3,40\n');\n"
      "CREATE TABLE shown (auction BIGINT, total BIGINT, tag STRING) WITH ('connector' = 'print');\n"
      "INSERT INTO shown SELECT auction, SUM(price), 'weir-printed' FROM bids WHERE price > 15 GROUP BY auction;\n";
  set_script(script);
  ASSERT_TRUE(b.click("#sql-explain"));
  ASSERT_NE(b.await("#sql-plan"), "") << b.text("#s-sql-result");
  EXPECT_NE(b.text("#sql-plan").find("Sink(shown)"), std::string::npos) << b.text("#sql-plan");
  EXPECT_NE(b.text("#sql-plan").find("Aggregate("), std::string::npos) << b.text("#sql-plan");
  ASSERT_TRUE(b.screenshot(shots + "/sql.png"));
  // The same through the REST API.
  auto explained = c.client().post("/v1/sql/explain", {{"script", script}});
  ASSERT_TRUE(explained.ok()) << explained.status();
  EXPECT_EQ((*explained)["plan"].get<std::string>(), b.text("#sql-plan"));

  b.run("document.getElementById('sql-parallelism').value = '2';");
  // A cluster job's checkpoints go where every process reaches.
  ASSERT_TRUE(b.click("#sql-submit"));
  ASSERT_TRUE(eventually([&] { return b.text("#sql-error").find("--checkpoint-dir") != std::string::npos; }, 20s))
      << b.text("#s-sql-result");
  b.run("document.getElementById('sql-checkpoint-dir').value = arguments[0];",
        nlohmann::json::array({c.dir().path("sql-chk")}));
  b.log();  // the refused explain's and submission's 400s are expected; nothing after them is
  ASSERT_TRUE(b.click("#sql-submit"));
  std::string job;
  ASSERT_TRUE(eventually(
      [&] {
        const std::string url = b.url(), prefix = base + "/ui/#/jobs/";
        if (url.rfind(prefix, 0) != 0) return false;
        job = url.substr(prefix.size());
        return true;
      },
      20s))
      << b.url() << " " << b.text("#s-sql-result");
  auto ended = c.client().wait(job, 60000);
  ASSERT_TRUE(ended.ok()) << ended.status();
  ASSERT_EQ((*ended)["status"], "FINISHED") << *ended;
  // Its vertices are named after the query, and drawn with those names.
  auto detail = c.client().job(job);
  ASSERT_TRUE(detail.ok()) << detail.status();
  std::vector<std::string> names;
  for (const auto& v : (*detail)["vertices"]) names.push_back(v["name"]);
  ASSERT_GE(names.size(), 2u) << *detail;
  // Its counts, though it ended before a heartbeat could carry them: each
  // ended task reports its last ones. Three rows pass the WHERE.
  EXPECT_EQ((*detail)["vertices"][0]["metrics"].value("records_out", -1), 3) << *detail;
  EXPECT_EQ((*detail)["vertices"][1]["metrics"].value("records_in", -1), 3) << *detail;
  const std::string all = absl::StrJoin(names, " | ");
  EXPECT_NE(all.find("values-bids -> WHERE (price > 15)"), std::string::npos) << all;
  EXPECT_NE(all.find("SUM(price) BY auction -> SELECT auction, SUM(price), 'weir-printed'"), std::string::npos) << all;
  ASSERT_TRUE(eventually([&] { return b.text("#job-name").find("FINISHED") != std::string::npos; }, 20s))
      << b.text("#s-head");
  EXPECT_TRUE(eventually([&] { return digits_of(b.text("#vertices tr[data-vertex='1'] td[data-metric='records_in']")) == 3; },
                         20s))
      << b.text("#vertices");
  ASSERT_TRUE(eventually(
      [&] {
        nlohmann::json drawn =
            b.run("return [...document.querySelectorAll('#s-graph g.vertex > title')].map(t => t.textContent);");
        return drawn.is_array() && drawn.size() == names.size() &&
               std::all_of(names.begin(), names.end(),
                           [&](const std::string& n) { return std::find(drawn.begin(), drawn.end(), n) != drawn.end(); });
      },
      20s))
      << all;
  ASSERT_TRUE(b.screenshot(shots + "/sql-job.png", 1200));

  // Its three rows on the TaskManager's standard output, in the browser
  // and through the REST API.
  b.go(base + "/ui/#/taskmanagers/tm-a");
  ASSERT_TRUE(b.click("#output-stdout"));
  const std::vector<std::string> rows = {"+I[2, 20, weir-printed]", "+I[1, 30, weir-printed]", "+I[3, 40, weir-printed]"};
  ASSERT_TRUE(eventually(
      [&] {
        const std::string shown = b.text("#log-view");
        return std::all_of(rows.begin(), rows.end(), [&](const std::string& r) { return shown.find(r) != std::string::npos; });
      },
      20s))
      << b.text("#log-view") << "\n" << slurp(c.dir().path("tm-a.out"));
  EXPECT_NE(b.text("#log-status").find("up to byte"), std::string::npos) << b.text("#log-status");
  ASSERT_TRUE(b.screenshot(shots + "/taskmanager-stdout.png", 1400));
  auto out = c.client().get("/v1/taskmanagers/tm-a/stdout?offset=0&length=1048576");
  ASSERT_TRUE(out.ok()) << out.status();
  const std::string lines = (*out)["lines"].dump();
  for (const std::string& r : rows) EXPECT_NE(lines.find(r), std::string::npos) << lines;
  auto too_long = c.client().get("/v1/taskmanagers/tm-a/stdout?length=2000000");
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("not between 1 and 1048576"), std::string::npos) << too_long.status();
  EXPECT_EQ(errors_in(b.log()), "");
}

// An iteration's job page: the back edge (components -> head) is drawn as
// a feedback arc, and the head keeps its column right after the source
// rather than being pushed past the operator that feeds it back.
TEST(WebUiTest, AnIterationsBackEdgeIsDrawnAsAFeedbackArc) {
  Cluster c("web-ui-iteration");
  ASSERT_TRUE(c.start({{"tm-a", 2}})) << "the cluster did not come up\n" << c.jm_log();
  const std::string base = (tls_mode() ? "https://" : "http://") + c.rest();
  const std::string edges = c.dir().path("edges.txt");
  {
    std::ofstream out(edges);
    for (int i = 0; i < 200000; ++i) out << i << ' ' << (i * 7919) % 200000 << '\n';
  }
  auto job = c.client().submit("connected-components", {"--input", edges, "--output", c.dir().path("out"), "-p", "2",
                                                        "--rate", "100", "--checkpoint-dir", c.dir().path("chk")});
  ASSERT_TRUE(job.ok()) << job.status();
  WebDriver b(c.dir().path("chromedriver"));
  ASSERT_TRUE(b.error().empty()) << b.error();
  b.go(base + "/ui/login");
  b.type("#secret", c.secret());
  ASSERT_TRUE(b.click("#sign-in"));
  ASSERT_TRUE(eventually([&] { return b.url().rfind(base + "/ui/", 0) == 0 && b.url() != base + "/ui/login"; }, 20s));
  ASSERT_TRUE(eventually([&] { return b.click("tr[data-job='" + *job + "'] a"); }, 20s));
  ASSERT_TRUE(eventually(
      [&] {
        return b.run("return document.querySelectorAll('#s-graph g.vertex').length;") == 3 &&
               b.run("return document.querySelectorAll('#s-graph g.edge.feedback').length;") == 1;
      },
      20s))
      << b.text("#s-graph");
  EXPECT_EQ(b.run("return document.querySelector('#s-graph g.edge.feedback').dataset.source;"), "2");
  EXPECT_EQ(b.run("return document.querySelector('#s-graph g.edge.feedback').dataset.target;"), "1");
  EXPECT_NE(b.text("#s-graph").find("feedback \u00b7 REBALANCE"), std::string::npos) << b.text("#s-graph");
  // Columns: source, head, components.
  auto x_of = [&](int vertex) {
    return b.run("return Number(document.querySelector(\"#s-graph g.vertex[data-vertex='" + std::to_string(vertex) +
                 "'] rect.box\").getAttribute('x'));")
        .get<double>();
  };
  EXPECT_LT(x_of(0), x_of(1));
  EXPECT_LT(x_of(1), x_of(2));
  const char* shots = std::getenv("WEIR_SCREENSHOT_DIR");
  ASSERT_TRUE(b.screenshot((shots != nullptr ? std::string(shots) : c.dir().path("")) + "/iteration.png", 1400));
  EXPECT_EQ(errors_in(b.log()), "");
  EXPECT_TRUE(c.client().cancel(*job).ok());
}

}  // namespace
}  // namespace weir::testing
