// model.parameters()' order, from the tensors' qualified names in the module tree
// ("model.2.cv1.conv.weight"; MultiheadAttention's "out_proj.weight" is its child's; a Parameter
// layer is a tensor its parent module holds itself: "vit.embeddings.cls_token"): named_modules()'
// pre-order, each module's own tensors before its children's, a module's members ranked as its
// `register:` lists them (ModelSpec::registrations), then the others in the order first met
// (forward's).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "nnmem/spec.hpp"

namespace nnmem::detail {

/// Whether the `count` tensors, named in declaration order by name(i, buffer) (which overwrites
/// `buffer`), are in model.parameters()' order already, as most models declare them: a walk
/// that keeps only the modules on the current tensor's path (their members met so far, by hash),
/// not the whole tree. True only when module_order would leave them as they are; false when it
/// would move one, or when two member names' hashes collide (module_order then decides).
bool in_module_order(std::size_t count, const std::function<void(std::size_t, std::string&)>& name,
                     const std::vector<Registration>& registrations);

/// The tensors' indices in model.parameters()' order (a stable sort: tensors of equal keys keep
/// their declaration order). `names` are views that must outlive the call.
std::vector<int> module_order(const std::vector<std::string_view>& names, const std::vector<Registration>& registrations);

}  // namespace nnmem::detail
