// A JSON document with positions: nlohmann-json parses the values, but keeps no positions, so
// the top-level members' positions are found by one pass over the text (strings skipped, depth
// counted). Errors about a member then point at its key or value as `file:line:column`.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nnmem/diagnostic.hpp"

namespace nnmem::json_text {

struct Member {
  std::size_t key = 0, value = 0;  // byte offsets of the key's opening quote and of the value
};

struct Document {
  SourcePath file;  // shared by every location in the document
  std::string text;
  nlohmann::json root;                    // an object
  std::map<std::string, Member> members;  // its members' positions (the last of duplicate keys, as nlohmann keeps)

  SourceLoc at(std::size_t offset) const;
  SourceLoc key_loc(const std::string& key) const;    // the document's start when absent
  SourceLoc value_loc(const std::string& key) const;  // the document's start when absent
};

/// A top-level member as the text has it: its name (unescaped), the byte offsets of its key's
/// opening quote and of its value, and of the end of the value's text.
struct MemberText {
  std::string name;
  std::size_t key = 0, value = 0, end = 0;
};

/// The top-level object's members of `text`, in the order of the text (a duplicate key each
/// time it occurs), in one pass. `text` must be valid JSON (nlohmann::json::accept()).
std::vector<MemberText> members_of(const std::string& text);

/// Parses `text` as a JSON object. Throws nnmem::Error located where the JSON is malformed, or
/// at the start when the document is not an object.
Document parse(const std::string& text, const std::string& file);

}  // namespace nnmem::json_text
