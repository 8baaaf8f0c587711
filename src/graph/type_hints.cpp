// "Did you mean" for layer types, by meaning as well as by spelling: other frameworks' and
// PyTorch's functional names (Dense, Cat, MaxPooling2D), the same words in another order
// (Conv2dTranspose), and no spelling neighbour for a PyTorch layer nnmem does not model (RReLU is
// not ReLU, however close the letters).
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "nnmem/layer.hpp"

namespace nnmem {

namespace {

// Words of a type name, lower-case, with each framework's word for a thing replaced by
// PyTorch's: "GlobalAveragePooling2D" -> {adaptive, avg, pool, 2d}. Digits stay with the "d".
std::multiset<std::string> words(std::string_view name) {
  static const std::map<std::string, std::string> synonyms = {
      {"dense", "linear"},        {"fc", "linear"},           {"fullyconnected", "linear"}, {"cat", "concat"},
      {"concatenate", "concat"},  {"multiply", "mul"},        {"sum", "add"},               {"pooling", "pool"},
      {"average", "avg"},         {"mean", "avg"},            {"global", "adaptive"},       {"normalization", "norm"},
      {"deconv", "convtranspose"}, {"deconvolution", "convtranspose"}, {"convolution", "conv"}, {"swish", "silu"},
      {"expanddims", "unsqueeze"}, {"transposed", "transpose"}};
  std::multiset<std::string> out;
  std::string word;
  const auto flush = [&] {
    if (word.empty()) return;
    const auto it = synonyms.find(word);
    out.insert(it == synonyms.end() ? word : it->second);
    word.clear();
  };
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto ch = static_cast<unsigned char>(name[i]);
    if (ch == '_' || ch == '-' || ch == '.' || ch == ' ') {
      flush();
    } else if (std::isdigit(ch)) {
      flush();
      word += static_cast<char>(ch);
      if (i + 1 < name.size() && (name[i + 1] == 'd' || name[i + 1] == 'D')) word += 'd', ++i;
      flush();
    } else {
      // A capital between a lower-case letter and another starts a word ("MaxPool"); one that
      // begins a run of capitals ends an acronym ("ReLU", "SiLU" stay whole).
      const bool next_lower = i + 1 < name.size() && std::islower(static_cast<unsigned char>(name[i + 1]));
      if (std::isupper(ch) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])) && next_lower) flush();
      word += static_cast<char>(std::tolower(ch));
    }
  }
  flush();
  // Names written as one word: "convtranspose" and "batchnorm" stay whole in PyTorch's names.
  if (out.count("conv") && out.count("transpose")) {
    out.erase(out.find("conv"));
    out.erase(out.find("transpose"));
    out.insert("convtranspose");
  }
  if (out.count("batch") && out.count("norm")) {
    out.erase(out.find("batch"));
    out.erase(out.find("norm"));
    out.insert("batchnorm");
  }
  return out;
}

bool is_dimension(const std::string& w) { return w.size() == 2 && std::isdigit(static_cast<unsigned char>(w[0])) && w[1] == 'd'; }

std::multiset<std::string> without_dimension(std::multiset<std::string> w) {
  for (auto it = w.begin(); it != w.end();) it = is_dimension(*it) ? w.erase(it) : std::next(it);
  return w;
}

// PyTorch's torch.nn modules (1.13) that nnmem does not model: a name of one is no typo.
const std::set<std::string>& pytorch_modules() {
  static const std::set<std::string> names = {
      "AdaptiveLogSoftmaxWithLoss", "AlphaDropout", "Bilinear", "CELU", "ChannelShuffle", "ConstantPad1d", "ConstantPad2d",
      "ConstantPad3d", "CosineSimilarity", "CrossMapLRN2d", "Embedding", "EmbeddingBag", "FeatureAlphaDropout", "Fold",
      "FractionalMaxPool2d", "FractionalMaxPool3d", "GLU", "GroupNorm", "Hardshrink", "Hardtanh",
      "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LPPool1d", "LPPool2d", "LayerNorm",
      "LocalResponseNorm", "LogSigmoid", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "MultiheadAttention", "PReLU",
      "PairwiseDistance", "PixelShuffle", "PixelUnshuffle", "RReLU", "ReflectionPad1d", "ReflectionPad2d",
      "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "SELU", "Softmax2d", "Softmin",
      "Softshrink", "Softsign", "SyncBatchNorm", "Tanhshrink", "Threshold", "Transformer", "TransformerDecoder",
      "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer", "Unflatten", "Unfold", "Upsample",
      "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad2d"};
  return names;
}

// Lower-case letters and digits only: "leaky_relu" and "LeakyReLU" are the same name.
std::string compact(std::string_view name) {
  std::string out;
  for (char ch : name)
    if (std::isalnum(static_cast<unsigned char>(ch))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool same_letters(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("'" + names[i] + "'");
  return out;
}

}  // namespace

std::string layer_type_hint(std::string_view type) {
  const std::vector<std::string> types = layer_types();
  for (const auto& t : types)
    if (compact(t) == compact(type)) return "; did you mean '" + t + "'?";  // another case, PyTorch's snake_case
  // The same words, maybe in another order or another framework's words; without a dimension,
  // each dimension's type.
  const auto wanted = words(type);
  std::vector<std::string> by_meaning, any_dimension;
  for (const auto& t : types) {
    const auto have = words(t);
    if (have == wanted) by_meaning.push_back(t);
    else if (without_dimension(have) == wanted && without_dimension(have) != have) any_dimension.push_back(t);
  }
  if (by_meaning.empty()) by_meaning = any_dimension;
  if (!by_meaning.empty()) return "; did you mean " + quoted_list(by_meaning) + "?";
  for (const auto& m : pytorch_modules())
    if (same_letters(m, type)) return {};  // a layer nnmem does not model: no look-alike by spelling
  const std::string near = nearest_name(std::string(type), types);
  return near.empty() ? std::string{} : "; did you mean '" + near + "'?";
}

}  // namespace nnmem
