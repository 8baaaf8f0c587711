// The layer registry (src/graph/registry.cpp) and the attribute schemas every rule declares. Layer
// files register themselves from static initialisers, which a linker may drop when nothing refers
// to their object file — so every built-in type is listed here explicitly.
#include <algorithm>
#include <set>

#include "../helpers.hpp"
#include "checks.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
// Every built-in type, one family per line (layers/*.cpp). A new type needs a line here and tests
// in tests/layers/.
const std::vector<std::string> kBuiltins = {
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",                   // conv.cpp
    "Linear", "Conv1D", "ColumnParallelLinear", "RowParallelLinear", "ScatterToSequenceParallelRegion",        // linear.cpp
    "GatherFromSequenceParallelRegion",                                                                      //
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",                            // pool.cpp
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",                                           // adaptive_pool.cpp
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",                                           //
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",                                                             // batchnorm.cpp
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU", "SiLU", "Mish", "Hardswish", "Hardsigmoid", "Softplus",     // activation.cpp
    "Sigmoid", "Tanh", "Softmax", "LogSoftmax",                                                              //
    "Hardtanh", "SELU", "CELU", "Threshold", "PReLU", "GLU", "LogSigmoid", "Softsign", "Tanhshrink",         // activation_extra.cpp
    "Softmin",                                                                                               //
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "StochasticDepth", "DropPath",         // dropout.cpp
    "Upsample",                                                                                              // upsample.cpp
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",                // padding.cpp
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",         //
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",                                   //
    "PixelShuffle", "PixelUnshuffle", "ChannelShuffle",                                                      // shuffle.cpp
    "Unfold", "Fold",                                                                                        // fold.cpp
    "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell",                                                  // recurrent.cpp
    "Flatten", "Reshape", "View", "Unsqueeze", "Squeeze", "Identity",                                        // reshape.cpp
    "Add", "Mul", "Concat",                                                                                  // merge.cpp
    "Embedding", "Parameter", "Constant", "Buffer",                                                          // embedding.cpp
    "LayerNorm", "LayerNorm2d", "RMSNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", // norm.cpp
    "MoEExperts",                                                                                            // moe.cpp
    "ScaledDotProductAttention",                                                                             // attention.cpp
    "MatMul",                                                                                                // matmul.cpp
    "MultiheadAttention",                                                                                    // multihead_attention.cpp
    "Transpose", "Permute", "Contiguous", "Expand", "Slice", "Select", "Split", "Chunk", "RepeatInterleave", // tensor_ops.cpp
    "To",                                                                                                    // tensor_ops.cpp
    "Mean", "Sum", "Amax", "Scale", "Neg", "MaskedFill",                                                     // reduce.cpp
    "NewGELU", "Float16Clamp",                                                                               // hf_activation.cpp
};
}  // namespace

TEST_CASE("Registry: every built-in layer type is registered") {
  CHECK(kBuiltins.size() == 127);
  const auto types = layer_types();
  for (const auto& type : kBuiltins) {
    CAPTURE(type);
    const LayerDef* def = find_layer(type);
    REQUIRE(def != nullptr);
    CHECK(def->type == type);
    CHECK_FALSE(def->summary.empty());
    CHECK(static_cast<bool>(def->infer));
    CHECK(def->min_inputs >= 0);
    CHECK((def->max_inputs == -1 || def->max_inputs >= def->min_inputs));
    CHECK(std::find(types.begin(), types.end(), type) != types.end());
  }
  // layer_types() is sorted and has no duplicates; a type missing from the list above is worth a look
  CHECK(std::is_sorted(types.begin(), types.end()));
  CHECK(std::set<std::string>(types.begin(), types.end()).size() == types.size());
  for (const auto& type : types) {
    const bool listed = std::find(kBuiltins.begin(), kBuiltins.end(), type) != kBuiltins.end();
    WARN_MESSAGE(listed, type << " is registered but not listed in test_registry.cpp");
  }
}

TEST_CASE("Registry: unknown types") {
  CHECK(find_layer("Conv4d") == nullptr);
  CHECK(find_layer("conv2d") == nullptr);  // PyTorch's spelling only
  CHECK(find_layer("") == nullptr);
  CHECK(find_layer("Conv2d ") == nullptr);
  CHECK(find_layer("nn.Conv2d") == nullptr);
  // in a spec: located at the type's value, with a suggestion
  CHECK(one_layer_error("{type: Conv2D, out_channels: 8, kernel_size: 3}", {3, 8, 8}) ==
        "test.yaml:4:12: error: unknown layer type 'Conv2D'; did you mean 'Conv2d'? (`nnmem layers` lists the known types)");
  CHECK(one_layer_error("{type: Transformer}", {3, 8, 8}) ==
        "test.yaml:4:12: error: unknown layer type 'Transformer' (`nnmem layers` lists the known types)");
}

TEST_CASE("Registry: every attribute has help text and a description") {
  for (const auto& type : layer_types()) {
    const LayerDef* def = find_layer(type);
    std::set<std::string> names;
    for (const AttrDef& a : def->attrs) {
      CAPTURE(type);
      CAPTURE(a.name);
      CHECK_FALSE(a.name.empty());
      CHECK(names.insert(a.name).second);  // unique within the type
      CHECK_FALSE(a.help.empty());
      CHECK_FALSE(a.describe().empty());
      // a required attribute has no default; a String attribute defaults to one of its words
      if (a.required) CHECK(a.fallback.kind == Value::Kind::Null);
      if (a.kind == AttrKind::String && !a.required) {
        CHECK(std::find(a.words.begin(), a.words.end(), a.fallback.text) != a.words.end());
        CHECK(a.describe().find(a.fallback.text) != std::string::npos);
      }
      if (a.kind == AttrKind::IntTuple) CHECK(a.rank >= 0);  // 0: one value per spatial dimension, any number
    }
  }
}

TEST_CASE("Registry: attribute descriptions") {
  const auto describe = [](const std::string& type, const std::string& attr) {
    for (const AttrDef& a : find_layer(type)->attrs)
      if (a.name == attr) return a.describe();
    return std::string("(no attribute ") + attr + ")";
  };
  CHECK(describe("Conv2d", "kernel_size") == "int or list of 2 ints >= 1; required");
  CHECK(describe("Conv2d", "stride") == "int or list of 2 ints >= 1; default 1");
  CHECK(describe("Conv2d", "padding") == "int or list of 2 ints >= 0, or same | valid; default 0");
  CHECK(describe("Conv2d", "padding_mode") == "string: zeros | reflect | replicate | circular; default zeros");
  CHECK(describe("Conv2d", "in_channels") == "int >= 1; optional");
  CHECK(describe("Conv3d", "dilation") == "int or list of 3 ints >= 1; default 1");
  CHECK(describe("ConvTranspose2d", "padding") == "int or list of 2 ints >= 0; default 0");
  CHECK(describe("ConvTranspose2d", "output_padding") == "int or list of 2 ints >= 0; default 0");
  CHECK(describe("Linear", "bias") == "bool; default true");
  CHECK(describe("MaxPool2d", "stride") == "int or list of 2 ints >= 1; optional");
  CHECK(describe("Dropout", "p") == "float in [0, 1]; default 0.5");
  CHECK(describe("BatchNorm2d", "momentum") == "float in [0, 1]; default 0.1");
  CHECK(describe("GELU", "approximate") == "string: none | tanh; default none");
  CHECK(describe("Reshape", "shape") == "list of ints; required");
  CHECK(describe("Concat", "dim") == "int; required");
  CHECK(describe("Flatten", "end_dim") == "int; default -1");
  CHECK(describe("Upsample", "scale_factor") == "float or list of floats in [0, inf]; optional");
  CHECK(describe("Upsample", "size") == "int or list of ints >= 1; optional");
}

// A rule must not fake a missing bound with a sentinel: BatchNorm's eps, once declared
// between(0, 1e300), was described as "float in [0, 1e+300]; default 1e-05" (`nnmem layers`).
TEST_CASE("Registry: no description shows a sentinel bound") {
  for (const auto& type : layer_types())
    for (const AttrDef& a : find_layer(type)->attrs) {
      CAPTURE(type);
      CAPTURE(a.name);
      CHECK(a.describe().find("e+300") == std::string::npos);
    }
}

TEST_CASE("Registry: input counts and autocast policies") {
  for (const auto& type : kBuiltins) {
    CAPTURE(type);
    const LayerDef* def = find_layer(type);
    if (type == "Add" || type == "Concat") {
      CHECK(def->min_inputs == (type == "Add" ? 2 : 1));  // torch.cat([x]) is legal, x + nothing is not
      CHECK(def->max_inputs == -1);
    } else if (type == "Mul" || type == "MatMul" || type == "MaskedFill") {
      CHECK(def->min_inputs == 2);
      CHECK(def->max_inputs == 2);
    } else if (type == "Parameter" || type == "Buffer") {  // they read nothing (inputs: [])
      CHECK(def->min_inputs == 0);
      CHECK(def->max_inputs == 0);
    } else if (type == "Constant") {  // made from nothing, or from inputs without a gradient
      CHECK(def->min_inputs == 0);
      CHECK(def->max_inputs == -1);
    } else if (type == "ScaledDotProductAttention") {  // query, key, value[, attn_mask]
      CHECK(def->min_inputs == 3);
      CHECK(def->max_inputs == 4);
    } else if (type == "MultiheadAttention") {  // query[, key[, value]][, key_padding_mask][, attn_mask]
      CHECK(def->min_inputs == 1);
      CHECK(def->max_inputs == 5);
    } else if (type == "MoEExperts") {  // the tokens and the router's logits
      CHECK(def->min_inputs == 2);
      CHECK(def->max_inputs == 2);
    } else if (type == "RNNCell" || type == "GRUCell" || type == "LSTMCell") {
      CHECK(def->min_inputs == 1);  // x, and optionally h (LSTMCell: h and c)
      CHECK(def->max_inputs == (type == "LSTMCell" ? 3 : 2));
    } else {
      CHECK(def->min_inputs == 1);
      CHECK(def->max_inputs == 1);
    }
    // torch.autocast on CUDA: convolutions, linear, matmul, attention and prelu run in 16-bit;
    // softmax, log_softmax, softmin, layer_norm and group_norm in float32 (not batch, instance or rms norm).
    // (On the CPU 1.13 leaves prelu alone: TorchProfile::cpu_autocast_uncast, test_activation_extra.cpp.)
    const bool lower = type.rfind("Conv", 0) == 0 || type == "Linear" || type == "MatMul" || type == "PReLU" ||
                       type == "ScaledDotProductAttention" || type == "ColumnParallelLinear" || type == "RowParallelLinear" ||
                       type == "MultiheadAttention";  // its first op is in_proj, a Linear
    const bool f32 = type == "Softmax" || type == "LogSoftmax" || type == "Softmin" || type == "LayerNorm" ||
                     type == "LayerNorm2d" || type == "GroupNorm";
    CHECK(def->autocast == (lower ? Autocast::Lower : f32 ? Autocast::Float32 : Autocast::Inherit));
    // CPU autocast (1.13 and 2.13) runs reflection_pad1d/2d and replication_pad1d/2d/3d in
    // float32: their output is float32 for a bfloat16 input (validation/ops_saved_zoo.md); so are
    // the 3-D poolings' (validation/probe_autocast_113.py)
    const bool pool3d = type == "MaxPool3d" || type == "AvgPool3d" || type == "AdaptiveAvgPool3d" || type == "AdaptiveMaxPool3d";
    const bool f32_cpu =
        type == "ReflectionPad1d" || type == "ReflectionPad2d" || type.rfind("ReplicationPad", 0) == 0 || pool3d;
    CHECK(def->autocast_on(Device::Cpu) == (lower ? Autocast::Lower : f32_cpu ? Autocast::Float32 : Autocast::Inherit));
  }
}
