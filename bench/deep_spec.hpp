// The generated residual MLP the benchmarks time: `blocks` blocks of 4 layers (Linear, GELU,
// Linear, a residual Add) written with `repeat`, of `width` features, and a 10-way head with a
// cross-entropy loss (blocks × 4 + 1 layers).
#pragma once

#include <string>

inline std::string deep_spec(int blocks, int width) {
  const std::string w = std::to_string(width);
  return "name: deep_mlp\ninputs:\n  x: [" + w + "]\nblocks:\n  Res:\n    layers:\n"
         "      - {name: fc1, type: Linear, out_features: " + w + "}\n"
         "      - {name: act, type: GELU}\n"
         "      - {name: fc2, type: Linear, out_features: " + w + "}\n"
         "      - {name: add, type: Add, inputs: [fc2, in]}\n"
         "layers:\n  - {name: body, block: Res, repeat: " + std::to_string(blocks) + "}\n"
         "  - {name: head, type: Linear, out_features: 10}\nloss: cross_entropy\n";
}
