#include "harness/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <sstream>

#include "harness/build_info.hpp"
#include "harness/problem.hpp"

namespace harness {

using nlohmann::json;

// ---------------------------------------------------------------- text helpers

std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                         TableStyle style) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());

  auto cell = [&](const std::string& s, std::size_t c) {
    const std::string pad(width[c] - std::min(width[c], s.size()), ' ');
    return c == 0 ? s + pad : pad + s;
  };
  auto line = [&](const std::vector<std::string>& r) {
    std::string out = style == TableStyle::markdown ? "| " : "";
    for (std::size_t c = 0; c < width.size(); ++c) {
      if (c) out += style == TableStyle::markdown ? " | " : "  ";
      out += cell(c < r.size() ? r[c] : "", c);
    }
    if (style == TableStyle::markdown) out += " |";
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };

  std::string out = line(header);
  if (style == TableStyle::markdown) {
    out += "|";
    for (std::size_t c = 0; c < width.size(); ++c) out += c == 0 ? " --- |" : " ---: |";
    out += "\n";
  } else {
    std::size_t total = 0;
    for (auto w : width) total += w + 2;
    out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  }
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string fmt_us(double ns) {
  if (!std::isfinite(ns)) return "nan";
  const double us = ns / 1000.0;
  char buf[32];
  if (us >= 100) std::snprintf(buf, sizeof buf, "%.0f", us);
  else if (us >= 10) std::snprintf(buf, sizeof buf, "%.1f", us);
  else std::snprintf(buf, sizeof buf, "%.2f", us);
  return buf;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::map<std::string, double> official_reference_us(const std::string& problem) {
  std::map<std::string, double> out;
  const Problem* p = find_problem(problem);
  if (!p) return out;
  for (const auto& s : p->benchmark_shapes())
    if (s.official_reference_us) out[s.label()] = *s.official_reference_us;
  return out;
}

// ---------------------------------------------------------------- SVG

namespace {

struct Bar {
  std::string label;
  double value_ns = 0;
  std::string kind;  // css class: variant | floor | ref | failed
  std::string note;  // text after the value
};

std::string fmt_px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Horizontal bar chart, bars scaled to the largest value.
std::string svg_bars(const std::string& title, const std::vector<Bar>& bars) {
  const double label_w = 220, bar_w = 520, row_h = 20, top = 24, text_w = 170;
  const double width = label_w + bar_w + text_w;
  const double height = top + row_h * static_cast<double>(bars.size()) + 8;
  double vmax = 0;
  for (const auto& b : bars)
    if (std::isfinite(b.value_ns)) vmax = std::max(vmax, b.value_ns);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << fmt_px(height)
    << "\" role=\"img\"><title>" << html_escape(title) << "</title>";
  o << "<text x=\"0\" y=\"15\" class=\"ct\">" << html_escape(title) << "</text>";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + row_h * static_cast<double>(i);
    const double w = vmax > 0 && std::isfinite(b.value_ns) ? std::max(1.0, b.value_ns / vmax * bar_w) : 0;
    o << "<text x=\"" << label_w - 6 << "\" y=\"" << fmt_px(y + 14) << "\" class=\"bl\">" << html_escape(b.label)
      << "</text>";
    o << "<rect x=\"" << label_w << "\" y=\"" << fmt_px(y + 3) << "\" width=\"" << fmt_px(w) << "\" height=\""
      << row_h - 6 << "\" class=\"" << b.kind << "\"/>";
    o << "<text x=\"" << fmt_px(label_w + w + 4) << "\" y=\"" << fmt_px(y + 14) << "\" class=\"bv\">"
      << fmt_us(b.value_ns) << " us" << (b.note.empty() ? "" : " " + html_escape(b.note)) << "</text>";
  }
  o << "</svg>\n";
  return o.str();
}

std::string pct(double num, double den) {
  if (!(num > 0) || !(den > 0)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * num / den);
  return buf;
}

struct Series {
  std::string name;
  Entry entry;
};

// Runs to show for one (device, problem): every leaderboard best, then the command-line runs.
std::map<std::pair<std::string, std::string>, std::vector<Series>> group(const ReportInput& in) {
  std::map<std::pair<std::string, std::string>, std::vector<Series>> g;
  const json& devs = in.leaderboard.contains("devices") ? in.leaderboard["devices"] : json::object();
  for (const auto& [dev, problems] : devs.items())
    for (const auto& [prob, variants] : problems.items())
      for (const auto& [var, slot] : variants.items())
        if (slot.contains("best") && !slot["best"].is_null())
          g[{dev, prob}].push_back({var, entry_from_json(slot["best"])});
  for (const auto& e : in.results) g[{e.device, e.problem}].push_back({e.variant + " (run)", e});
  for (auto& [_, series] : g)
    std::stable_sort(series.begin(), series.end(), [](const Series& a, const Series& b) {
      const double sa = a.entry.score_ns.value_or(INFINITY), sb = b.entry.score_ns.value_or(INFINITY);
      return sa < sb;
    });
  return g;
}

std::string ranking_table(const std::vector<Series>& series) {
  std::ostringstream o;
  o << "<table><tr><th>#</th><th>variant</th><th>score (us)</th><th>of floor</th><th>passed</th>"
       "<th>commit</th><th>date</th></tr>\n";
  int rank = 0;
  for (const auto& s : series) {
    std::vector<double> floors;
    for (const auto& sh : s.entry.shapes) floors.push_back(sh.floor_ns);
    double log_floor = 0;
    bool have_floor = !floors.empty();
    for (double f : floors) {
      have_floor = have_floor && f > 0;
      if (f > 0) log_floor += std::log(f);
    }
    const double floor_gm = have_floor ? std::exp(log_floor / static_cast<double>(floors.size())) : 0;
    o << "<tr><td>" << ++rank << "</td><td>" << html_escape(s.name) << "</td><td>"
      << (s.entry.score_ns ? fmt_us(*s.entry.score_ns) : "-") << "</td><td>"
      << (s.entry.score_ns ? pct(floor_gm, *s.entry.score_ns) : "") << "</td><td class=\""
      << (s.entry.passed ? "ok\">yes" : "bad\">no") << "</td><td>" << html_escape(short_commit(s.entry.commit, 12))
      << "</td><td>" << html_escape(s.entry.date) << "</td></tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string problem_section(const std::string& device, const std::string& problem, const std::vector<Series>& series) {
  std::ostringstream o;
  o << "<section><h2>" << html_escape(problem) << " on " << html_escape(device) << "</h2>\n";
  std::vector<Bar> ranking;
  for (const auto& s : series)
    if (s.entry.score_ns)
      ranking.push_back({s.name, *s.entry.score_ns, s.entry.passed ? "variant" : "failed", ""});
  if (!ranking.empty()) o << svg_bars("Ranking: score (geometric mean of shape means)", ranking);
  o << ranking_table(series);

  // Shapes in first-seen order across all series.
  std::vector<std::string> labels;
  for (const auto& s : series)
    for (const auto& sh : s.entry.shapes)
      if (std::find(labels.begin(), labels.end(), sh.label) == labels.end()) labels.push_back(sh.label);
  const auto refs = official_reference_us(problem);
  for (const auto& label : labels) {
    std::vector<Bar> bars;
    double floor_ns = 0;
    for (const auto& s : series) {
      const ShapeEntry* sh = s.entry.shape(label);
      if (!sh || !(sh->mean_ns > 0)) continue;
      floor_ns = std::max(floor_ns, sh->floor_ns);
      bars.push_back({s.name, sh->mean_ns, sh->official_pass ? "variant" : "failed", pct(sh->floor_ns, sh->mean_ns) + " of floor"});
    }
    if (floor_ns > 0) bars.push_back({"floor (bytes / bandwidth)", floor_ns, "floor", ""});
    if (auto it = refs.find(label); it != refs.end())
      bars.push_back({"official reference (MI355X)", it->second * 1000.0, "ref", ""});
    if (!bars.empty()) o << svg_bars(label, bars);
  }
  o << "</section>\n";
  return o.str();
}

constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:24px;color:#222}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td:nth-child(2),th:nth-child(2){text-align:left}.ok{color:#17702a}.bad{color:#b00020}
svg{display:block;margin:6px 0}.ct{font-size:13px;font-weight:bold}.bl{font-size:12px;text-anchor:end}
.bv{font-size:11px}.variant{fill:#3b6fb6}.failed{fill:#c0392b}.floor{fill:#9e9e9e}.ref{fill:#e08a1e}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle})";

}  // namespace

std::string render_html_report(const ReportInput& in) {
  std::ostringstream o;
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);

  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << html_escape(in.title)
    << "</title>\n<style>" << kStyle << "</style></head><body>\n";
  o << "<h1>" << html_escape(in.title) << "</h1>\n<p>generated " << date << " by harness "
    << html_escape(build_info().version) << " (" << html_escape(build_info().git_commit.substr(0, 12))
    << "). Times are means over the timed runs; floor = bytes that must move / the device's measured "
       "bandwidth; the official reference is GPU MODE's MI355X time, for orientation only.</p>\n";
  o << "<p class=\"legend\"><span class=\"lg\" style=\"background:#3b6fb6\"></span>passed"
       "<span style=\"background:#c0392b\"></span>failed a check"
       "<span style=\"background:#9e9e9e\"></span>floor"
       "<span style=\"background:#e08a1e\"></span>official reference (MI355X)</p>\n";
  const auto groups = group(in);
  if (groups.empty()) o << "<p>No runs recorded.</p>\n";
  for (const auto& [key, series] : groups) o << problem_section(key.first, key.second, series);
  o << "</body></html>\n";
  return o.str();
}

}  // namespace harness
