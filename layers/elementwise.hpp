// Element-wise activations described by a table row: what backward keeps (the input or the
// output), whether `inplace` exists and what its backward keeps then, and which dtypes it takes.
// And the softmax family. Shared by activation.cpp and activation_extra.cpp.
#pragma once

#include <functional>
#include <vector>

#include "common.hpp"

namespace nnmem::layers {

enum class Keeps { Input, Output };
enum class InPlace { No, KeepsResult, KeepsClone };  // whether `inplace` exists, and what it keeps
enum class Dtypes {
  Float,       // floating point only ("not implemented for 'Long'")
  FloatOrInt,  // clamps (relu, hardtanh): integers too, in their own dtype; not bool
  AnyToFloat,  // sigmoid, tanh: integers and bool give the default dtype, float32
};

struct Activation {
  const char* type;
  const char* summary;
  Keeps keeps;
  InPlace inplace;
  Dtypes dtypes;
  std::vector<AttrDef> extra_attrs;
  const char* negative_scale = nullptr;  // the attribute scaling x < 0, when `inplace` keeps the result
  std::function<void(const Attrs&)> check = {};  // the constructor's own checks of its attributes
};

/// The output of an element-wise op on input 0 (its shape; its dtype, as `dtypes` says), after
/// checking the input's dtype.
TensorType activation_output(const LayerCall& call, Dtypes dtypes);

/// The rule of a table row.
LayerDef activation_def(Activation a);

/// Softmax and its kin along `dim`; `negated`: of the negated input (Softmin).
LayerDef softmax_def(const char* type, const char* summary, bool negated = false);

}  // namespace nnmem::layers
