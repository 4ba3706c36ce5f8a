// Every --json report matches its JSON Schema in docs/json/ (one schema per
// report, shared definitions in common.schema.json): each golden JSON output
// of tests/golden/, and live outputs of the reports without a golden
// (search, regress, devices, synth, plan's infeasible explanation, ...).
//
// The validator handles the subset of JSON Schema (draft 2020-12) the
// schemas use — type (one or a list), properties, required,
// additionalProperties (false or a schema), items, enum, $ref to
// "#/$defs/x" or "file.schema.json#/$defs/x", and the annotations $schema,
// $id, title, description, $defs — and refuses a schema with any other
// keyword, so a schema cannot silently rely on something unchecked.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"

namespace {

using nlohmann::json;
using swapplan::testing::CliRun;
using swapplan::testing::ReadFile;
using swapplan::testing::Swapplan;

const std::string kSchemaDir = std::string(SWAPPLAN_SOURCE_ROOT) + "/docs/json";

class Validator {
 public:
  Validator() {
    for (const auto& e : std::filesystem::directory_iterator(kSchemaDir)) {
      const std::string name = e.path().filename().string();
      if (name.size() > 12 && name.substr(name.size() - 12) == ".schema.json") {
        schemas_[name] = json::parse(ReadFile(e.path().string()));
      }
    }
  }

  const std::map<std::string, json>& schemas() const { return schemas_; }

  // Problems of `doc` against schema file `file` ("" = valid), one per line.
  std::string Validate(const json& doc, const std::string& file) const {
    std::string problems;
    Check(doc, schemas_.at(file), file, "$", &problems);
    return problems;
  }

  // Keywords outside the subset, anywhere in `schema`.
  static void Unsupported(const json& schema, const std::string& where, std::string* out) {
    static const std::set<std::string> kKnown = {
        "$schema", "$id", "title", "description", "$defs", "type", "properties",
        "required", "additionalProperties", "items", "enum", "$ref"};
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      if (kKnown.count(it.key()) == 0) *out += where + ": unsupported keyword " + it.key() + "\n";
    }
    if (schema.contains("properties")) {
      for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
        Unsupported(it.value(), where + "." + it.key(), out);
      }
    }
    if (schema.contains("$defs")) {
      for (auto it = schema["$defs"].begin(); it != schema["$defs"].end(); ++it) {
        Unsupported(it.value(), where + ".$defs." + it.key(), out);
      }
    }
    if (schema.contains("items")) Unsupported(schema["items"], where + "[]", out);
    if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object()) {
      Unsupported(schema["additionalProperties"], where + ".*", out);
    }
  }

 private:
  static bool IsType(const json& v, const std::string& type) {
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    if (type == "string") return v.is_string();
    if (type == "integer") return v.is_number_integer();
    if (type == "number") return v.is_number();
    if (type == "boolean") return v.is_boolean();
    if (type == "null") return v.is_null();
    return false;
  }

  void Check(const json& v, const json& s, const std::string& file, const std::string& path,
             std::string* out) const {
    if (s.contains("$ref")) {
      const std::string ref = s["$ref"];
      const size_t hash = ref.find('#');
      const std::string target = hash == 0 ? file : ref.substr(0, hash);
      const std::string pointer = ref.substr(hash + 1);
      Check(v, schemas_.at(target).at(json::json_pointer(pointer)), target, path, out);
      return;
    }
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_array()) {
        for (const json& t : s["type"]) ok = ok || IsType(v, t.get<std::string>());
      } else {
        ok = IsType(v, s["type"].get<std::string>());
      }
      if (!ok) {
        *out += path + ": " + v.dump() + " is not of type " + s["type"].dump() + "\n";
        return;
      }
    }
    if (s.contains("enum")) {
      bool found = false;
      for (const json& e : s["enum"]) found = found || e == v;
      if (!found) *out += path + ": " + v.dump() + " is not one of " + s["enum"].dump() + "\n";
    }
    if (v.is_object()) {
      if (s.contains("required")) {
        for (const json& r : s["required"]) {
          if (!v.contains(r.get<std::string>())) {
            *out += path + ": missing " + r.get<std::string>() + "\n";
          }
        }
      }
      for (auto it = v.begin(); it != v.end(); ++it) {
        const std::string at = path + "." + it.key();
        if (s.contains("properties") && s["properties"].contains(it.key())) {
          Check(it.value(), s["properties"][it.key()], file, at, out);
        } else if (s.contains("additionalProperties")) {
          const json& extra = s["additionalProperties"];
          if (extra.is_boolean()) {
            if (!extra.get<bool>()) *out += at + ": not in the schema\n";
          } else {
            Check(it.value(), extra, file, at, out);
          }
        }
      }
    }
    if (v.is_array() && s.contains("items")) {
      for (size_t i = 0; i < v.size(); ++i) {
        Check(v[i], s["items"], file, path + "[" + std::to_string(i) + "]", out);
      }
    }
  }

  std::map<std::string, json> schemas_;
};

const Validator& Schemas() {
  static const Validator v;
  return v;
}

// The report a golden file holds: its name up to the first '_', except the
// inspect report of the synthesized trace and the replay page's data.
std::string SchemaOfGolden(const std::string& name) {
  if (name.find("_inspect") != std::string::npos) return "inspect.schema.json";
  if (name.rfind("replay_report_", 0) == 0) return "replay_report.schema.json";
  const std::string stem = name.substr(0, name.size() - 5);  // without ".json"
  return stem.substr(0, stem.find('_')) + ".schema.json";
}

TEST_CASE("json schemas: well-formed, only the supported subset", "[cli][json]") {
  REQUIRE(Schemas().schemas().size() >= 13);
  for (const auto& [name, schema] : Schemas().schemas()) {
    INFO(name);
    std::string problems;
    Validator::Unsupported(schema, name, &problems);
    CHECK(problems.empty());
    CHECK(schema.value("$id", "") == "https://swapplan.dev/json/" + name);
    CHECK_FALSE(schema.value("description", "").empty());
  }
}

TEST_CASE("json schemas: every golden JSON output matches its report's schema", "[cli][json]") {
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(SWAPPLAN_GOLDEN_DIR)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".json") continue;
    // Policy files are not reports: their format is docs/policy-format.md
    // and ReadPolicy (policy_json.cc) is their validator.
    if (name.rfind("policy_", 0) == 0) continue;
    INFO(name);
    const std::string schema = SchemaOfGolden(name);
    REQUIRE(Schemas().schemas().count(schema) == 1);
    CHECK(Schemas().Validate(json::parse(ReadFile(e.path().string())), schema) == "");
    ++checked;
  }
  CHECK(checked >= 10);
}

TEST_CASE("json schemas: live reports without a golden match too", "[cli][json]") {
  const std::string dir = swapplan::testing::TempDir() + "/schemas";
  std::filesystem::create_directories(dir);
  struct Case {
    std::string args;
    std::string schema;
    int exit_code;
  };
  const std::vector<Case> cases = {
      {"search traces/two_layers.json --device-memory 600B --max-generations 2 --population 6 "
       "--threads 1 --quiet --json",
       "search.schema.json", 0},
      {"regress --baseline quality/toy.json --json", "regress.schema.json", 0},
      {"regress --baseline quality/toy_doctored.json --json", "regress.schema.json", 4},
      {"devices --json", "devices.schema.json", 0},
      // The allocator model's columns (docs/allocator.md) and a reserved check.
      {"curve traces/two_layers.json --alloc-conf expandable_segments:True --json",
       "curve.schema.json", 0},
      {"check traces/chameleon_toy.json policies/chameleon_toy_bad.json --budget-on reserved "
       "--json",
       "check.schema.json", 2},
      {"compare traces/two_layers.json --device-memory 600B --planners lru,noswap "
       "--budget-on reserved --json",
       "compare.schema.json", 3},  // 2 MiB segments: nothing fits 600 B as reserved bytes
      {"advise traces/two_layers.json --device-memory 250B --json", "advise.schema.json", 3},
      {"advise --model llama2-7b --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 128 "
       "--vocab 256 --seq 16 --device-memory 1GiB --json",
       "advise.schema.json", 0},
      {"synth --model llama2-7b --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 128 "
       "--vocab 256 --seq 16 --json -o '" + dir + "/t.json'",
       "synth.schema.json", 0},
      {"synth --model llama2-7b --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 128 "
       "--vocab 256 --inference --batch 2 --prompt 16 --generate 4 --json -o '" + dir +
           "/r.json'",
       "synth.schema.json", 0},
      {"plan traces/chameleon_toy.json --reserve 100B --min-tensor-bytes 0 --json --explain",
       "plan.schema.json", 0},
      {"plan traces/chameleon_toy.json --reserve 300B --min-tensor-bytes 0 --release-wait never "
       "--explain --json",
       "plan.schema.json", 3},
      {"compare traces/chameleon_toy.json --oversubscription 2x --json", "compare.schema.json", 0},
      {"compare traces/two_layers.json --device-memory 300B --json", "compare.schema.json", 3},
      {"simulate traces/two_layers.json policies/two_layers/lru.json --device-memory 250B "
       "--oom-handling algorithm3 --json",
       "simulate.schema.json", 3},
      {"compare ../../traces/gpt2_small.json.gz --device h100-80gb --planners noswap,ideal --json",
       "compare.schema.json", 0},
      {"curve traces/toy_valid.json --json --all-iterations", "curve.schema.json", 0},
      {"curve traces/toy_allocator.json --json", "curve.schema.json", 0},
      {"inspect traces/toy_allocator.json --json", "inspect.schema.json", 0},
      {"inspect import/small_kineto.json --json", "inspect.schema.json", 0},
      {"search traces/two_layers.json --device-memory 600B --max-generations 2 --population 6 "
       "--threads 1 --quiet --json -o '" + dir + "/advisor.json'",
       "search.schema.json", 0},
      {"simulate traces/two_layers.json '" + dir + "/advisor.json' --json", "simulate.schema.json",
       0},
      {"simulate traces/saved_events.json policies/saved_events/chameleon.json --device-memory "
       "150B --clock saved-tensors --json",
       "simulate.schema.json", 3},
      {"plan traces/chameleon_toy.json --reserve 100B --min-tensor-bytes 0 --layers 1 "
       "--h2d-bandwidth 0.25GB/s --explain --json",
       "plan.schema.json", 0},
      {"replay ../../traces/loss_scale_validation.json.gz --device-memory 1.6MB "
       "--h2d-bandwidth 10GB/s --d2h-bandwidth 10GB/s --min-tensor-bytes 0 --warmup-iterations 0 "
       "--genpolicy-iterations 0 -q --json --explain 2",
       "replay.schema.json", 0},
      {"replay ../../traces/loss_scale_validation.json.gz --device-memory 1.6MB "
       "--h2d-bandwidth 10GB/s --d2h-bandwidth 10GB/s --min-tensor-bytes 0 --warmup-iterations 0 "
       "--genpolicy-iterations 0 -q --json --oracle --compare-matchers --rows none",
       "replay.schema.json", 0},
      {"replay ../../traces/loss_scale_validation.json.gz --device-memory 1.6MB "
       "--h2d-bandwidth 10GB/s --d2h-bandwidth 10GB/s --min-tensor-bytes 0 --warmup-iterations 0 "
       "--genpolicy-iterations 0 -q --json --execute host",
       "replay.schema.json", 0},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    CliRun r = Swapplan(c.args);
    INFO(r.err);
    CHECK(r.exit_code == c.exit_code);
    CHECK(Schemas().Validate(json::parse(r.out), c.schema) == "");
  }
}

TEST_CASE("json schemas: the validator finds what is wrong", "[cli][json]") {
  json doc = json::parse(ReadFile(std::string(SWAPPLAN_GOLDEN_DIR) + "/plan_toy.json"));
  REQUIRE(Schemas().Validate(doc, "plan.schema.json") == "");
  json extra = doc;
  extra["peak_after_bytes"] = 1;  // the old name: not in the vocabulary any more
  CHECK(Schemas().Validate(extra, "plan.schema.json") == "$.peak_after_bytes: not in the schema\n");
  json missing = doc;
  missing.erase("budget_bytes");
  CHECK(Schemas().Validate(missing, "plan.schema.json") == "$: missing budget_bytes\n");
  json wrong = doc;
  wrong["device"]["copy_engines"] = "two";
  CHECK(Schemas().Validate(wrong, "plan.schema.json") ==
        "$.device.copy_engines: \"two\" is not of type \"integer\"\n");
  json item = doc;
  item["items"][1]["size_bytes"] = nullptr;
  CHECK(Schemas().Validate(item, "plan.schema.json") ==
        "$.items[1].size_bytes: null is not of type \"integer\"\n");
}

}  // namespace
