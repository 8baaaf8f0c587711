// Pictures as SVG text: a small writer, and the stacked-area chart that the timeline and the
// sweep both draw (axes in bytes, a legend, bands and marks over it). No dependencies: the
// files open in any browser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnmem::report {

class Svg {
 public:
  Svg(double width, double height);
  void rect(double x, double y, double w, double h, const std::string& fill, double opacity = 1.0);
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1.0, bool dashed = false);
  void polygon(const std::vector<std::pair<double, double>>& points, const std::string& fill, double opacity = 1.0);
  void circle(double x, double y, double r, const std::string& fill, const std::string& stroke);
  /// anchor: "start", "middle" or "end"; `title` becomes a tooltip.
  void text(double x, double y, const std::string& s, double size = 12, const std::string& anchor = "start",
            const std::string& fill = "#222", bool bold = false);
  void title(const std::string& tooltip);  // a tooltip for the element just drawn
  std::string str() const;

 private:
  std::string body_;
  double width_, height_;
};

/// Text for XML: &, <, >, " escaped.
std::string xml_escape(const std::string& s);

/// A stacked-area chart of byte counts over an x axis of `points` columns.
struct StackedChart {
  struct Series {
    std::string name;
    std::string color;
    std::vector<std::int64_t> values;  // one per point
  };
  std::string title, subtitle, x_label;
  std::vector<std::string> x_ticks;    // a label per point ("" for none)
  std::vector<double> x_values;        // numeric positions of the points (a linear axis); empty: evenly spaced
  std::vector<Series> series;          // bottom first
  std::int64_t y_max = 0;              // at least the largest stack
  /// Shaded spans of points [first, last] with a label (the step's phases).
  struct Band {
    std::size_t first, last;
    std::string label, color;
  };
  std::vector<Band> bands;
  /// Horizontal lines (a budget) and marked points (the peak, the largest batch that fits).
  struct HLine {
    std::int64_t bytes;
    std::string label, color;
  };
  std::vector<HLine> lines;
  struct Mark {
    std::size_t point;
    std::int64_t bytes;
    std::string label, color;
  };
  std::vector<Mark> marks;
  bool points_as_steps = false;        // true: columns (a timeline); false: a line through each point (a sweep)
};

std::string render(const StackedChart& chart);

/// Readable tick values for an axis up to `max` bytes: multiples of a power of two.
std::vector<std::int64_t> byte_ticks(std::int64_t max);

}  // namespace nnmem::report
