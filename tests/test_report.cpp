#include <algorithm>
#include <string>
#include <vector>

#include "harness/report.hpp"
#include "tests/catch.hpp"
#include "tests/leaderboard_fixtures.hpp"

using nlohmann::json;

namespace {

// True if every element is closed in order (void elements and "<x/>" excepted). Returns the first
// problem in `why`.
bool tags_balanced(const std::string& html, std::string& why) {
  static const std::vector<std::string> kVoid = {"meta", "br", "img", "hr", "link", "input"};
  std::vector<std::string> stack;
  std::size_t pos = 0;
  while ((pos = html.find('<', pos)) != std::string::npos) {
    const std::size_t end = html.find('>', pos);
    if (end == std::string::npos) return why = "unterminated tag", false;
    std::string tag = html.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty() || tag[0] == '!') continue;  // doctype
    const bool closing = tag[0] == '/';
    const bool self_closing = tag.back() == '/';
    std::string name = tag.substr(closing ? 1 : 0);
    name = name.substr(0, name.find_first_of(" /"));
    if (self_closing || std::find(kVoid.begin(), kVoid.end(), name) != kVoid.end()) continue;
    if (!closing) {
      stack.push_back(name);
    } else {
      if (stack.empty() || stack.back() != name)
        return why = "</" + name + "> closes <" + (stack.empty() ? "" : stack.back()) + ">", false;
      stack.pop_back();
    }
  }
  if (!stack.empty()) return why = "<" + stack.back() + "> never closed", false;
  return true;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("report: tables in plain and markdown style", "[report]") {
  const std::string plain =
      harness::format_table({"name", "value"}, {{"a", "1"}, {"long name", "12345"}}, harness::TableStyle::plain);
  CHECK(plain == "name       value\n----------------\na              1\nlong name  12345\n");
  const std::string md = harness::format_table({"n", "v"}, {{"a", "1"}}, harness::TableStyle::markdown);
  CHECK(md == "| n | v |\n| --- | ---: |\n| a | 1 |\n");
  CHECK(harness::fmt_us(123456) == "123");
  CHECK(harness::fmt_us(12345) == "12.3");
  CHECK(harness::fmt_us(1234) == "1.23");
  CHECK(harness::html_escape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST_CASE("report: one self-contained, well-formed HTML file with SVG charts", "[report]") {
  harness::ReportInput in;
  in.leaderboard = harness::empty_leaderboard();
  harness::merge_entry(in.leaderboard, harness::entries_from_results(lbtest::two_shapes("v1", 100e3, 400e3))[0]);
  harness::merge_entry(in.leaderboard, harness::entries_from_results(lbtest::two_shapes("v2", 50e3, 300e3))[0]);
  in.results = harness::entries_from_results(lbtest::two_shapes("<script>", 70e3, 500e3, 10, false));
  in.title = "Test & report";
  const std::string html = harness::render_html_report(in);

  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  std::string why;
  CHECK(tags_balanced(html, why));
  INFO(why);
  // One ranking chart plus one chart per shape.
  CHECK(count(html, "<svg") == 3);
  CHECK(count(html, "<svg") == count(html, "</svg>"));
  CHECK(count(html, "class=\"floor\"") == 2);
  CHECK(count(html, "class=\"failed\"") >= 1);  // the failing run is drawn as failed
  // Nothing external, and names are escaped.
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("href=") == std::string::npos);
  CHECK(html.find("<script>") == std::string::npos);
  CHECK(html.find("&lt;script&gt;") != std::string::npos);
  CHECK(html.find("Test &amp; report") != std::string::npos);
  // The ranking lists the faster variant first.
  CHECK(html.find(">v2<") < html.find(">v1<"));
}

TEST_CASE("report: an empty leaderboard still gives a valid page", "[report]") {
  harness::ReportInput in;
  in.leaderboard = harness::empty_leaderboard();
  const std::string html = harness::render_html_report(in);
  std::string why;
  CHECK(tags_balanced(html, why));
  CHECK(html.find("No runs recorded") != std::string::npos);
}
