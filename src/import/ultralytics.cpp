// Ultralytics model files -> nnmem specs (include/nnmem/ultralytics.hpp). The translation is
// ultralytics.nn.tasks.parse_model's for the modules YOLOv8 and YOLO11 use, entry by entry: a module's
// input channels are its `from`'s output channels, a width c becomes
// make_divisible(min(c, max_channels) * width, 8) and a repeat count n > 1 becomes
// max(round(n * depth), 1) — written as expressions, so `--set width_multiple=…` still scales
// the spec — and each module is an instance of examples/yolov8.yaml's blocks (compiled in).
#include "nnmem/ultralytics.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "hf_families.hpp"
#include "nnmem/diagnostic.hpp"
#include "nnmem/yaml_tree.hpp"

namespace nnmem {
namespace {

const char* const kSupported = "Conv, C2f, C3k2, SPPF, C2PSA, nn.Upsample, Concat, Detect";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error({path, 0, 0}, "cannot read the file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string scalar(const YamlNode& n, const std::string& what) {
  if (n.kind != YamlNode::Kind::Scalar) throw Error(n.loc, what + ": expected a value, found " + (n.kind == YamlNode::Kind::Null ? "nothing" : "a list or mapping"));
  return n.scalar;
}

std::int64_t integer(const YamlNode& n, const std::string& what) {
  const std::string s = scalar(n, what);
  std::size_t used = 0;
  try {
    const long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error(n.loc, what + ": expected an integer, found '" + s + "'");
}

double number(const YamlNode& n, const std::string& what) {
  const std::string s = scalar(n, what);
  std::size_t used = 0;
  try {
    const double v = std::stod(s, &used);
    if (used == s.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw Error(n.loc, what + ": expected a number >= 0, found '" + s + "'");
}

bool truth(const YamlNode& n, const std::string& what) {
  const std::string s = scalar(n, what);
  if (s == "True" || s == "true") return true;
  if (s == "False" || s == "false") return false;
  throw Error(n.loc, what + ": expected True or False, found '" + s + "'");
}

std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The scale Ultralytics takes from a file name (guess_model_scale): yolov8n.yaml -> n.
std::string scale_of_name(const std::string& file) {
  const std::string stem = file.substr(file.find_last_of('/') + 1);
  std::smatch m;
  static const std::regex pattern("yolo(e-)?[v]?\\d+([nslmx])");
  return std::regex_search(stem, m, pattern) ? m[2].str() : "";
}

class Translator {
 public:
  Translator(const YamlNode& root, std::string file, std::string scale) : root_(root), file_(std::move(file)), scale_(std::move(scale)) {}

  ImportedUltralytics run() {
    ImportedUltralytics out;
    if (root_.kind != YamlNode::Kind::Map) throw Error(root_.loc, "an Ultralytics model file is a mapping with backbone and head");
    if (const YamlNode* act = root_.find("activation")) throw Error(act->loc, "activation: only Conv's default (nn.SiLU) is supported");
    const YamlNode* nc = root_.find("nc");
    if (!nc) throw Error(root_.loc, "nc (the number of classes) is missing");
    nc_ = integer(*nc, "nc");
    if (nc_ < 1) throw Error(nc->loc, "nc: expected at least 1, found " + std::to_string(nc_));
    read_scale(out);
    std::ostringstream layers;
    entries(layers);
    out.text = header(out) + blocks() + "layers:\n" + layers.str() + "outputs: [model." + std::to_string(detect_) + "]\nloss: mean\n";
    return out;
  }

 private:
  void read_scale(ImportedUltralytics& out) {
    const YamlNode* scales = root_.find("scales");
    if (const YamlNode* d = root_.find("depth_multiple")) depth_ = number(*d, "depth_multiple");
    if (const YamlNode* w = root_.find("width_multiple")) width_ = number(*w, "width_multiple");
    if (!scales) {
      if (!scale_.empty()) throw Error(root_.loc, "--scale " + scale_ + ": the file has no scales");
      return;
    }
    if (scales->kind != YamlNode::Kind::Map || scales->keys.empty()) throw Error(scales->loc, "scales: expected a mapping of scale: [depth, width, max_channels]");
    const std::string named = scale_.empty() ? scale_of_name(file_) : scale_;
    const auto* chosen = named.empty() ? &scales->keys.front() : nullptr;
    for (const auto& kv : scales->keys)
      if (kv.first == named) chosen = &kv;
    if (!chosen) {
      std::string known;
      for (const auto& kv : scales->keys) known += (known.empty() ? "" : ", ") + kv.first;
      throw Error(scales->loc, "scale '" + named + "' is not in scales (" + known + ")");
    }
    if (named.empty()) out.notes.push_back("no scale in the file name: the first, '" + chosen->first + "', as Ultralytics takes it (--scale for another)");
    const YamlNode& v = chosen->second;
    if (v.kind != YamlNode::Kind::List || v.items.size() != 3) throw Error(v.loc, "scales: " + chosen->first + ": expected [depth, width, max_channels]");
    depth_ = number(v.items[0], "depth");
    width_ = number(v.items[1], "width");
    max_channels_ = integer(v.items[2], "max_channels");
    out.scale = chosen->first;
    scale_ = chosen->first;
  }

  std::string header(const ImportedUltralytics& out) const {
    std::string h = "# " + file_ + " as ultralytics.nn.tasks.parse_model builds it" +
                    (out.scale.empty() ? "" : " at scale '" + out.scale + "'") +
                    ", translated by nnmem (nnmem import). Widths and\n# repeats are Ultralytics' rules as expressions "
                    "of the variables, so --set rescales it. The training\n# output is Detect's boxes and scores in one tensor "
                    "whose mean stands in for v8DetectionLoss\n# (examples/yolov8.yaml says more).\nname: " + stem() +
                    "\nvariables:\n  nc: " + std::to_string(nc_) + "\n  depth_multiple: " + fmt(depth_) + "\n  width_multiple: " +
                    fmt(width_) + "\n  max_channels: " + std::to_string(max_channels_) + "\n  reg_max: 16\n  image_size: 640\n";
    return h + "inputs:\n  images: [3, $image_size, $image_size]\n\n";
  }

  // The file's name without its folder and extension: the spec's name.
  std::string stem() const {
    const std::string base = file_.substr(file_.find_last_of('/') + 1);
    return base.substr(0, base.find('.'));
  }

  // examples/yolov8.yaml's blocks, as they stand there.
  static std::string blocks() {
    const std::string_view t = hf::template_text("yolov8");
    const std::size_t from = t.find("\nblocks:\n"), to = t.find("\nlayers:\n");
    if (from == std::string_view::npos || to == std::string_view::npos) throw std::logic_error("examples/yolov8.yaml lost its blocks");
    return std::string(t.substr(from + 1, to - from));
  }

  std::string width(std::int64_t c) const {
    return "\"$ceil(min(" + std::to_string(c) + ", max_channels) * width_multiple / 8) * 8\"";
  }

  // The index of the entry `from` names, checked.
  std::size_t source(const YamlNode& f, std::size_t i) const {
    const std::int64_t v = integer(f, "from");
    const std::int64_t k = v < 0 ? static_cast<std::int64_t>(i) + v : v;
    if (k < 0 || k >= static_cast<std::int64_t>(i))
      throw Error(f.loc, "from: " + std::to_string(v) + " names no earlier module (this is module " + std::to_string(i) + ")");
    return static_cast<std::size_t>(k);
  }

  void entries(std::ostringstream& out) {
    std::vector<const YamlNode*> all;
    for (const char* part : {"backbone", "head"}) {
      const YamlNode* list = root_.find(part);
      if (!list || list->kind != YamlNode::Kind::List) throw Error(list ? list->loc : root_.loc, std::string(part) + ": expected a list of [from, repeats, module, args]");
      for (const auto& e : list->items) all.push_back(&e);
    }
    std::vector<std::string> ch;  // each module's output channels, as an expression (no '$')
    std::vector<std::int64_t> stride;  // each module's output stride (C2PSA's attention views its map's height)
    bool legacy = true;  // parse_model's: Detect's class branch as v8's until a C3k2 is built
    // _predict_once keeps the output of each module a later one names by index (`from` other
    // than -1) in its list y until it returns: `var: "y[K]"` (docs/memory-model.md).
    std::set<std::size_t> saved;
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const YamlNode& e = *all[i];
      if (e.kind != YamlNode::Kind::List || e.items.size() != 4) throw Error(e.loc, "a module is [from, repeats, module, args]");
      const YamlNode &f = e.items[0], &args = e.items[3];
      std::ostringstream line;
      const std::string module = scalar(e.items[2], "module");
      const std::int64_t n = integer(e.items[1], "repeats");
      if (n < 1) throw Error(e.items[1].loc, "repeats: expected at least 1, found " + std::to_string(n));
      if (args.kind != YamlNode::Kind::List) throw Error(args.loc, module + ": args: expected a list");
      const auto arg = [&](std::size_t k) -> const YamlNode* { return k < args.items.size() ? &args.items[k] : nullptr; };
      const auto at_most = [&](std::size_t k) {
        if (args.items.size() > k) throw Error(args.items[k].loc, module + ": nnmem reads its first " + std::to_string(k) + " args");
      };
      if ((std::string(", ") + kSupported + ",").find(", " + module + ",") == std::string::npos)
        throw Error(e.items[2].loc, "module '" + module + "' is not supported; supported: " + kSupported);
      if (n > 1 && module != "C2f" && module != "C3k2" && module != "C2PSA")
        throw Error(e.items[1].loc, module + " repeated: only the repeats of C2f, C3k2 and C2PSA are supported");
      // The units parse_model makes, max(round(n * depth), 1), within what the block runs (the
      // block refuses more too, should --set raise depth_multiple; this names the module).
      const int most = module == "C2f" ? 6 : 2;
      if (const double units = std::max(std::nearbyint(static_cast<double>(n) * depth_), 1.0); n > 1 && units > most)
        throw Error(e.items[1].loc, module + ": " + std::to_string(n) + " repeats at depth_multiple " + fmt(depth_) + " are " +
                                        with_commas(static_cast<long long>(std::min(units, 1e18))) +
                                        (module == "C2f" ? " Bottlenecks" : " units") + "; nnmem's " + module + " runs 1 to " +
                                        std::to_string(most));
      std::vector<std::size_t> from;
      if (f.kind == YamlNode::Kind::List)
        for (const auto& x : f.items) from.push_back(source(x, i));
      else if (i == 0 && integer(f, "from") == -1)
        from.push_back(std::size_t(-1));  // the image
      else
        from.push_back(source(f, i));
      const auto keep = [&](const YamlNode& x) {
        if (integer(x, "from") != -1) saved.insert(source(x, i));
      };
      if (f.kind == YamlNode::Kind::List)
        for (const auto& x : f.items) keep(x);
      else
        keep(f);
      const auto input = [&](std::size_t k) { return "model." + std::to_string(k); };
      const auto in_key = [&] {
        return from[0] == std::size_t(-1) || from[0] + 1 == i ? std::string() : ", input: " + input(from[0]);
      };
      const std::string name = "  - {name: model." + std::to_string(i);
      const auto one_from = [&] {
        if (from.size() != 1) throw Error(f.loc, module + ": from: expected one module, found " + std::to_string(from.size()));
      };
      const std::string c_in = from[0] == std::size_t(-1) ? "3" : ch.at(from[0]);
      const std::int64_t s_in = from[0] == std::size_t(-1) ? 1 : stride.at(from[0]);
      std::int64_t s_out = s_in;
      const std::string reps = n > 1 ? "\"$max(round(" + std::to_string(n) + " * depth_multiple), 1)\"" : "1";
      if (module == "Conv" || module == "C2f" || module == "SPPF" || module == "C3k2" || module == "C2PSA") {
        one_from();
        if (!arg(0)) throw Error(args.loc, module + ": args: the output channels are missing");
        const std::int64_t c = integer(*arg(0), module + ": channels");
        const std::string c2 = c == nc_ ? "$nc" : width(c);
        if (module == "Conv") {
          at_most(3);
          const std::int64_t s = arg(2) ? integer(*arg(2), "Conv: s") : 1;
          if (s < 1 || s > 64) throw Error(arg(2)->loc, "Conv: s: expected 1 to 64, found " + std::to_string(s));
          if (s_in > (std::int64_t{1} << 40)) throw Error(arg(2)->loc, "Conv: s: the map's stride passes 2^40");
          s_out = s_in * s;
          line << name << ", block: Conv" << in_key() << ", c2: " << c2 << ", k: " << (arg(1) ? integer(*arg(1), "Conv: k") : 1)
              << ", s: " << s << "}\n";
        } else if (module == "C2f") {
          at_most(2);
          line << name << ", block: C2f" << in_key() << ", c2: " << c2 << ", n: " << reps
              << ", shortcut: " << (arg(1) && truth(*arg(1), "C2f: shortcut") ? "true" : "false") << "}\n";
        } else if (module == "C3k2") {
          // [c2, c3k, e]; parse_model gives every C3k2 c3k at scales m, l and x, and builds
          // Detect's class branch the new way (legacy false) once a C3k2 is there
          at_most(3);
          const bool c3k = (arg(1) && truth(*arg(1), "C3k2: c3k")) || scale_ == "m" || scale_ == "l" || scale_ == "x";
          const double e = arg(2) ? number(*arg(2), "C3k2: e") : 0.5;
          line << name << ", block: C3k2" << in_key() << ", c2: " << c2 << ", c: \"$floor(" << c2.substr(2, c2.size() - 3)
               << " * " << fmt(e) << ")\", n: " << reps << ", c3k: " << (c3k ? "true" : "false") << "}\n";
          legacy = false;
        } else if (module == "C2PSA") {
          at_most(1);
          if (c2.substr(2, c2.size() - 3) != c_in) throw Error(arg(0)->loc, "C2PSA: expected the channels of its input (model." + std::to_string(from[0]) + "), found " + std::to_string(c));
          line << name << ", block: C2PSA" << in_key() << ", c1: " << c2 << ", n: " << reps << ", h: \"$image_size // " << s_in << "\"}\n";
        } else {
          at_most(2);
          if (arg(1) && integer(*arg(1), "SPPF: k") != 5) throw Error(arg(1)->loc, "SPPF: k: nnmem's SPPF pools with k = 5");
          line << name << ", block: SPPF" << in_key() << ", c1: \"$" << c_in << "\", c2: " << c2 << "}\n";
        }
        ch.push_back(c == nc_ ? "nc" : c2.substr(2, c2.size() - 3));  // the quoted "$…" without its quotes and '$'
      } else if (module == "nn.Upsample") {
        one_from();
        at_most(3);
        if (!arg(1) || (arg(2) && scalar(*arg(2), "mode") != "nearest") || (arg(0) && arg(0)->scalar != "None"))
          throw Error(args.loc, "nn.Upsample: nnmem reads [None, scale_factor, \"nearest\"]");
        const double factor = number(*arg(1), "scale_factor");
        if (factor < 1 || factor > 64 || factor != static_cast<double>(static_cast<std::int64_t>(factor)) || s_in % static_cast<std::int64_t>(factor) != 0)
          throw Error(arg(1)->loc, "nn.Upsample: scale_factor: expected a whole factor of the map's stride " + std::to_string(s_in) + ", found " + fmt(factor));
        s_out = s_in / static_cast<std::int64_t>(factor);
        line << name << ", type: Upsample" << in_key() << ", scale_factor: " << factor << ", mode: nearest}\n";
        ch.push_back(c_in);
      } else if (module == "Concat") {
        if (arg(0) && integer(*arg(0), "Concat: dim") != 1) throw Error(arg(0)->loc, "Concat: only dim 1 (channels) is supported");
        std::string inputs, sum;
        for (std::size_t k : from) {
          inputs += (inputs.empty() ? "" : ", ") + input(k);
          sum += (sum.empty() ? "" : " + ") + ("(" + ch.at(k) + ")");
        }
        line << name << ", type: Concat, inputs: [" << inputs << "], dim: 1}\n";
        ch.push_back(sum);
      } else if (module == "Detect") {
        if (from.size() != 3) throw Error(f.loc, "Detect: from: expected the three levels P3, P4, P5, found " + std::to_string(from.size()));
        if (!arg(0) || scalar(*arg(0), "Detect: nc") != "nc") throw Error(args.loc, "Detect: args: expected [nc]");
        const std::string& p3 = ch.at(from[0]);
        line << name << ", block: Detect, inputs: [" << input(from[0]) << ", " << input(from[1]) << ", " << input(from[2])
            << "], c2: \"$max(max(16, (" << p3 << ") // 4), reg_max * 4)\", c3: \"$max(" << p3 << ", min(nc, 100))\"";
        line << ", legacy: " << (legacy ? "true" : "false") << ", ch0: \"$" << p3 << "\", ch1: \"$" << ch.at(from[1])
             << "\", ch2: \"$" << ch.at(from[2]) << "\"}\n";
        detect_ = i;
        ch.push_back("nc");
      } else {
        throw std::logic_error("a supported Ultralytics module without a translation: " + module);
      }
      lines.push_back(line.str());
      stride.push_back(s_out);
    }
    for (const std::size_t i : saved) lines[i].insert(lines[i].rfind('}'), ", var: \"y[" + std::to_string(i) + "]\"");
    for (const std::string& l : lines) out << l;

    if (detect_ == std::size_t(-1)) throw Error(root_.loc, "no Detect module: nnmem translates detection models");
  }

  const YamlNode& root_;
  std::string file_, scale_;
  std::int64_t nc_ = 0, max_channels_ = 1 << 30;
  double depth_ = 1.0, width_ = 1.0;
  std::size_t detect_ = std::size_t(-1);
};

}  // namespace

bool is_ultralytics_model(const std::string& path) {
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (path.substr(dot) != ".yaml" && path.substr(dot) != ".yml")) return false;
  // Only a regular file of a model file's size is looked into: a FIFO would block, and the
  // loader's own checks say what is wrong with anything else.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) > (1 << 20) || ec) return false;
  std::ifstream in(path);
  bool backbone = false, head = false;
  for (std::string line; std::getline(in, line);) {
    backbone = backbone || line.rfind("backbone:", 0) == 0;
    head = head || line.rfind("head:", 0) == 0;
  }
  return backbone && head;
}

ImportedUltralytics import_ultralytics_text(const std::string& text, const std::string& file, const std::string& scale) {
  const YamlNode root = parse_yaml_tree(text, file);
  return Translator(root, file, scale).run();
}

ImportedUltralytics import_ultralytics(const std::string& path, const std::string& scale) {
  return import_ultralytics_text(read_file(path), path, scale);
}

}  // namespace nnmem
