// Text -> the one YAML document of a spec, with yaml-cpp's failures turned into located errors.
#pragma once

#include <yaml-cpp/node/node.h>

#include <string>

#include "source_text.hpp"

namespace nnmem::raw {

/// Parses `text` (already checked by `source`) and returns its only document. Syntax errors,
/// nesting beyond yaml-cpp's limit, an empty file and a file of several documents are Errors
/// placed where the user can see them; yaml-cpp's endless empty documents never start.
YAML::Node load_single_document(const SourceText& source, const std::string& text);

}  // namespace nnmem::raw
