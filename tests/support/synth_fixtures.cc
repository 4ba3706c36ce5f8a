#include "support/synth_fixtures.h"

#include <catch2/catch.hpp>
#include <utility>

namespace swapplan::testing {

SynthOptions SmallGpt2Options() {
  SynthOptions o;
  absl::StatusOr<ModelConfig> gpt2 = ModelPreset("gpt2");
  REQUIRE(gpt2.ok());
  o.model = *std::move(gpt2);
  o.model.layers = 4;
  o.model.hidden_size = 256;
  o.model.ffn_hidden_size = 1024;
  o.model.num_heads = 4;
  o.model.num_kv_heads = 4;
  o.model.vocab_size = 1024;
  o.seq_length_tokens = 1024;
  REQUIRE(UseDevicePreset("a100-80g", &o).ok());
  o.flops_efficiency = 0.01;
  o.hbm_efficiency = 0.01;
  return o;
}

SynthOptions TwoLayerOptions(const char* preset, int64_t ffn_hidden_size) {
  SynthOptions o;
  absl::StatusOr<ModelConfig> model = ModelPreset(preset);
  REQUIRE(model.ok());
  o.model = *std::move(model);
  o.model.layers = 2;
  o.model.hidden_size = 1024;
  o.model.ffn_hidden_size = ffn_hidden_size;
  o.model.num_heads = 8;
  o.model.num_kv_heads = 8;
  REQUIRE(UseDevicePreset("a100-80g", &o).ok());
  return o;
}

}  // namespace swapplan::testing
