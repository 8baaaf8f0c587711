#include "svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nnmem/units.hpp"

namespace nnmem::report {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Chart geometry: the plot area inside the margins, the legend to its right.
constexpr double kWidth = 1180, kHeight = 560, kLeft = 86, kRight = 290, kTop = 64, kBottom = 70;

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

Svg::Svg(double width, double height) : width_(width), height_(height) {}

void Svg::rect(double x, double y, double w, double h, const std::string& fill, double opacity) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) + "\" fill=\"" + fill +
           "\" fill-opacity=\"" + num(opacity) + "\"/>\n";
}

void Svg::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width, bool dashed) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" stroke=\"" + stroke +
           "\" stroke-width=\"" + num(width) + "\"" + (dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
}

void Svg::polygon(const std::vector<std::pair<double, double>>& points, const std::string& fill, double opacity) {
  body_ += "<polygon fill=\"" + fill + "\" fill-opacity=\"" + num(opacity) + "\" points=\"";
  for (const auto& [x, y] : points) {
    body_ += num(x);
    body_ += ',';
    body_ += num(y);
    body_ += ' ';
  }
  body_ += "\"/>\n";
}

void Svg::circle(double x, double y, double r, const std::string& fill, const std::string& stroke) {
  body_ += "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(r) + "\" fill=\"" + fill + "\" stroke=\"" + stroke +
           "\" stroke-width=\"2\"/>\n";
}

void Svg::text(double x, double y, const std::string& s, double size, const std::string& anchor, const std::string& fill, bool bold) {
  body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size) + "\" text-anchor=\"" + anchor + "\" fill=\"" +
           fill + "\"" + (bold ? " font-weight=\"bold\"" : "") + ">" + xml_escape(s) + "</text>\n";
}

void Svg::title(const std::string& tooltip) {
  // Wraps the last element: <x …/> becomes <x …><title>…</title></x>.
  const std::size_t end = body_.rfind("/>\n");
  if (end == std::string::npos || end + 3 != body_.size()) return;
  const std::size_t open = body_.rfind('<', end);
  const std::string tag = body_.substr(open + 1, body_.find(' ', open) - open - 1);
  body_ = body_.substr(0, end) + "><title>" + xml_escape(tooltip) + "</title></" + tag + ">\n";
}

std::string Svg::str() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width_) +
         "\" height=\"" + num(height_) + "\" viewBox=\"0 0 " + num(width_) + " " + num(height_) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
         body_ + "</svg>\n";
}

std::vector<std::int64_t> byte_ticks(std::int64_t max) {
  // The largest power of two, times 1, 2 or 5 … in binary units, that gives 4 to 10 ticks.
  std::int64_t step = 1;
  while (step < max / 8) step *= 2;
  if (max / step < 4 && step > 1) step /= 2;
  std::vector<std::int64_t> ticks;
  for (std::int64_t t = 0; ticks.size() < 32; t += step) {
    ticks.push_back(t);
    if (t >= max || t > INT64_MAX - step) break;  // the last tick at or above the largest value
  }
  return ticks;
}

std::string render(const StackedChart& c) {
  Svg svg(kWidth, kHeight);
  const double w = kWidth - kLeft - kRight, h = kHeight - kTop - kBottom;
  const std::size_t n = c.x_ticks.size();
  std::int64_t y_max = std::max<std::int64_t>(c.y_max, 1);
  for (const auto& l : c.lines) y_max = std::max(y_max, l.bytes);
  const std::vector<std::int64_t> ticks = byte_ticks(y_max);
  const double top = static_cast<double>(std::max(ticks.back(), y_max));
  const bool linear = !c.points_as_steps && c.x_values.size() == n && n > 1 && c.x_values.back() > c.x_values.front();
  const auto X = [&](double i) {
    if (linear) {  // i is a point's index: its value's place on the axis
      const auto k = static_cast<std::size_t>(i);
      return kLeft + (c.x_values[k] - c.x_values.front()) / (c.x_values.back() - c.x_values.front()) * w;
    }
    return kLeft + (c.points_as_steps ? i / static_cast<double>(std::max<std::size_t>(n, 1)) : n > 1 ? i / static_cast<double>(n - 1) : 0.5) * w;
  };
  const auto Y = [&](double bytes) { return kTop + h - bytes / top * h; };

  svg.text(kLeft, 28, c.title, 17, "start", "#111", true);
  svg.text(kLeft, 48, c.subtitle, 12, "start", "#555");
  for (const auto& b : c.bands) {
    const double x0 = X(static_cast<double>(b.first)), x1 = X(static_cast<double>(b.last) + (c.points_as_steps ? 1 : 0));
    svg.rect(x0, kTop, std::max(x1 - x0, 0.5), h, b.color, 0.35);
    svg.text((x0 + x1) / 2, kTop + 14, b.label, 11, "middle", "#666");
  }
  for (std::int64_t t : ticks) {
    svg.line(kLeft, Y(static_cast<double>(t)), kLeft + w, Y(static_cast<double>(t)), "#e4e4e4");
    std::string label = human_bytes(t);  // "512 MiB", not "512.00 MiB"
    if (const auto zeros = label.find(".00 "); zeros != std::string::npos) label.erase(zeros, 3);
    svg.text(kLeft - 8, Y(static_cast<double>(t)) + 4, label, 11, "end", "#444");
  }
  // The stacks: each series' polygon from its base to its top.
  std::vector<std::int64_t> base(n, 0);
  for (const auto& s : c.series) {
    std::vector<std::pair<double, double>> upper, lower;
    for (std::size_t i = 0; i < n; ++i) {
      const double top_y = Y(static_cast<double>(base[i] + s.values[i])), base_y = Y(static_cast<double>(base[i]));
      if (c.points_as_steps) {
        upper.insert(upper.end(), {{X(static_cast<double>(i)), top_y}, {X(static_cast<double>(i + 1)), top_y}});
        lower.insert(lower.end(), {{X(static_cast<double>(i)), base_y}, {X(static_cast<double>(i + 1)), base_y}});
      } else {
        upper.emplace_back(X(static_cast<double>(i)), top_y);
        lower.emplace_back(X(static_cast<double>(i)), base_y);
      }
      base[i] += s.values[i];
    }
    upper.insert(upper.end(), lower.rbegin(), lower.rend());
    svg.polygon(upper, s.color, 0.85);
    svg.title(s.name);
  }
  svg.line(kLeft, kTop + h, kLeft + w, kTop + h, "#333");
  svg.line(kLeft, kTop, kLeft, kTop + h, "#333");
  const std::size_t every = std::max<std::size_t>(1, n / 16);
  double last_label = -1e9;  // labels at least 34 pixels apart, the last point's always
  for (std::size_t i = n; i-- > 0;)
    if (!c.x_ticks[i].empty() && (!c.points_as_steps || i % every == 0)) {
      const double x = X(static_cast<double>(i) + (c.points_as_steps ? 0.5 : 0));
      if (std::fabs(last_label - x) < 34) continue;
      last_label = x;
      svg.line(x, kTop + h, x, kTop + h + 5, "#333");
      svg.text(x, kTop + h + 19, c.x_ticks[i], 11, "middle", "#444");
    }
  svg.text(kLeft + w / 2, kHeight - 22, c.x_label, 13, "middle", "#222");
  for (const auto& l : c.lines) {
    svg.line(kLeft, Y(static_cast<double>(l.bytes)), kLeft + w, Y(static_cast<double>(l.bytes)), l.color, 2, true);
    // Below the line when it runs along the top, where the subtitle is.
    const double y = Y(static_cast<double>(l.bytes));
    svg.text(kLeft + w - 4, y < kTop + 24 ? y + 16 : y - 6, l.label, 12, "end", l.color, true);
  }
  for (const auto& m : c.marks) {
    const double x = X(static_cast<double>(m.point) + (c.points_as_steps ? 0.5 : 0)), y = Y(static_cast<double>(m.bytes));
    svg.circle(x, y, 6, "white", m.color);
    const bool left = x > kLeft + w * 0.6;
    svg.text(left ? x - 10 : x + 10, std::max(y - 10, kTop + 28), m.label, 12, left ? "end" : "start", m.color, true);
  }
  // The legend, top series first (as stacked).
  double ly = kTop + 8;
  svg.text(kLeft + w + 20, ly, "memory kind", 12, "start", "#111", true);
  for (auto it = c.series.rbegin(); it != c.series.rend(); ++it) {
    ly += 22;
    svg.rect(kLeft + w + 20, ly - 11, 14, 14, it->color, 0.85);
    svg.text(kLeft + w + 40, ly, it->name, 12);
  }
  return svg.str();
}

}  // namespace nnmem::report
