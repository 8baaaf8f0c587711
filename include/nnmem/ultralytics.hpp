// An Ultralytics model file (yolov8.yaml: `nc`, `scales`, `backbone` and `head` lists of
// [from, repeats, module, args]) translated into an nnmem spec, as ultralytics.nn.tasks'
// parse_model builds the model: the scale chosen as Ultralytics chooses it, its depth and width
// rules written as expressions of the spec's variables (depth_multiple, width_multiple,
// max_channels, nc), and each module an instance of examples/yolov8.yaml's blocks. An importer
// writes a spec, never estimates.
#pragma once

#include <string>
#include <vector>

namespace nnmem {

struct ImportedUltralytics {
  std::string text;                // the spec (YAML)
  std::string scale;               // the scale used ("n"), or "" for a file without scales
  std::vector<std::string> notes;  // assumptions worth a user's attention
};

/// Whether `path` holds an Ultralytics model file (a YAML file with `backbone` and `head`).
bool is_ultralytics_model(const std::string& path);

/// Reads and translates an Ultralytics model file. `scale`, when not empty, replaces the one
/// the file name gives (yolov8n.yaml -> n; else the first of `scales`). Throws nnmem::Error
/// located in the file: an unsupported module (listing the supported ones), a bad `from`, args
/// of the wrong kind, an unknown scale.
ImportedUltralytics import_ultralytics(const std::string& path, const std::string& scale = "");
/// The same for text in memory; `file` names it in locations and gives the scale letter.
ImportedUltralytics import_ultralytics_text(const std::string& text, const std::string& file, const std::string& scale = "");

}  // namespace nnmem
