#include "json_text.hpp"

#include <algorithm>

namespace nnmem::json_text {

namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::vector<MemberText> members_of(const std::string& text) {
  std::vector<MemberText> out;
  const std::size_t n = text.size();
  int depth = 0;
  bool expect_key = false;
  const auto value_ends = [&](std::size_t i) {  // at the ',' or '}' after the last member's value
    if (out.empty() || out.back().end != 0) return;
    while (i > out.back().value && space(text[i - 1])) --i;
    out.back().end = i;
  };
  for (std::size_t i = 0; i < n;) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t start = i++;
      bool escaped = false;
      while (i < n && text[i] != '"') {
        escaped = escaped || text[i] == '\\';
        i += text[i] == '\\' ? 2 : 1;
      }
      ++i;
      if (depth == 1 && expect_key) {
        std::size_t j = i;
        while (j < n && (space(text[j]) || text[j] == ':')) ++j;
        std::string name = escaped ? nlohmann::json::parse(text.substr(start, i - start)).get<std::string>()
                                   : text.substr(start + 1, i - start - 2);
        out.push_back({std::move(name), start, j, 0});
        expect_key = false;
        i = j;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      expect_key = ++depth == 1 && c == '{';
    } else if (c == '}' || c == ']') {
      if (--depth == 0) value_ends(i);
    } else if (c == ',' && depth == 1) {
      value_ends(i);
      expect_key = true;
    }
    ++i;
  }
  return out;
}

SourceLoc Document::at(std::size_t offset) const {
  offset = std::min(offset, text.size());
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  const std::size_t nl = offset == 0 ? std::string::npos : text.rfind('\n', offset - 1);
  const std::size_t column = offset - (nl == std::string::npos ? 0 : nl + 1) + 1;
  return {file, static_cast<int>(std::min<std::ptrdiff_t>(line, 1'000'000'000)),
          static_cast<int>(std::min<std::size_t>(column, 1'000'000'000))};
}

SourceLoc Document::key_loc(const std::string& key) const {
  const auto it = members.find(key);
  return at(it == members.end() ? text.find('{') : it->second.key);
}

SourceLoc Document::value_loc(const std::string& key) const {
  const auto it = members.find(key);
  return at(it == members.end() ? text.find('{') : it->second.value);
}

Document parse(const std::string& text, const std::string& file) {
  Document doc{file, text, {}, {}};
  try {
    doc.root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ..."
    std::string what = e.what();
    const std::size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw Error(doc.at(e.byte == 0 ? 0 : e.byte - 1), "not valid JSON: " + what);
  }
  if (!doc.root.is_object())
    throw Error(doc.at(text.find_first_not_of(" \t\r\n") == std::string::npos ? 0 : text.find_first_not_of(" \t\r\n")),
                std::string("expected a JSON object (a Hugging Face config.json), found ") + doc.root.type_name());
  for (MemberText& m : members_of(text)) doc.members[std::move(m.name)] = {m.key, m.value};  // the last of duplicates
  return doc;
}

}  // namespace nnmem::json_text
