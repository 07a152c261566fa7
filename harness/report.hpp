// Human-facing output: plain/markdown tables for the terminal and CI summaries, and the
// self-contained HTML report (inline SVG, no external assets).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/leaderboard.hpp"

namespace harness {

enum class TableStyle { plain, markdown };

// Columns are left-aligned for the first column and right-aligned for the others.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                         TableStyle style);

// "12.3", "1234" ... : a time in microseconds with 3 significant digits (ns input).
std::string fmt_us(double ns);
std::string html_escape(const std::string& s);

// Official MI355X reference times (us) by shape label, from the problem's benchmark shapes.
std::map<std::string, double> official_reference_us(const std::string& problem);

struct ReportInput {
  nlohmann::json leaderboard;  // may be empty_leaderboard()
  std::vector<Entry> results;  // extra runs given on the command line
  std::string title = "Kernel harness report";
};
std::string render_html_report(const ReportInput& in);

}  // namespace harness
