// "No report, table or timeline shows a bare tensor id where a name is
// known" (issue 21): every command that lists tensors or policy items runs
// on a trace whose tensors all have module-path names, and its text, --json,
// Chrome timeline and HTML-report data are scanned for a tensor id that
// appears without its name.
//
// The trace: `swapplan synth` (gpt2, 2 layers, hidden 64, seq 512, 4
// sequences per micro-batch, 3 iterations; every tensor named, e.g.
// "mb0.layers.0.mlp.fc1") written as JSON, with every tensor id shifted by
// 900000 so that an id (900000..900999) cannot be mistaken for an op index,
// a byte count or a duration of this small trace. Its unswapped peak is
// 15.05 MiB; a 12 MiB device makes the planners swap.
//
// The rules, given the trace's ids and names:
//   text  every occurrence of an id as a whole number is labelled
//         (trace/tensor_label.h): "tensor ID 'NAME'" (short form) or
//         "NAME (ID)" (table cell), NAME being that id's name;
//   JSON  every object holding an id as a number also holds a string that
//         contains the id's name (the "label" field beside "tensor_id"),
//         and no array holds a bare id.
// The checks can fail: the "the scanner finds ..." case feeds each rule an
// unlabelled id.
#include <cctype>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"
#include "swapplan/trace/io.h"

namespace {

using nlohmann::json;
using swapplan::testing::CliRun;
using swapplan::testing::ReadFile;
using swapplan::testing::Swapplan;

constexpr uint64_t kIdOffset = 900000;

struct NamedTrace {
  std::string path;
  std::map<uint64_t, std::string> names;  // file id -> name
};

// The renumbered synthesized trace (above), made once per test run.
const NamedTrace& Named() {
  static const NamedTrace t = [] {
    NamedTrace out;
    const std::string synth = swapplan::testing::TempDir() + "/names_synth.json";
    CliRun r = Swapplan(
        "synth --model gpt2 --layers 2 --hidden 64 --heads 2 --ffn 256 --vocab 256 --seq 512 "
        "--micro-batch 4 --iterations 3 --flops-efficiency 0.01 --hbm-efficiency 0.01 -q -o '" +
        synth + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    json d = json::parse(ReadFile(synth));
    for (json& tensor : d["tensors"]) {
      tensor["id"] = tensor["id"].get<uint64_t>() + kIdOffset;
      REQUIRE(tensor.contains("name"));
      out.names[tensor["id"].get<uint64_t>()] = tensor["name"].get<std::string>();
    }
    for (json& it : d["iterations"]) {
      for (json& op : it["ops"]) {
        for (const char* k : {"inputs", "outputs"}) {
          for (json& id : op[k]) id = id.get<uint64_t>() + kIdOffset;
        }
      }
      if (it.contains("memory_events")) {
        for (json& e : it["memory_events"]) e["tensor"] = e["tensor"].get<uint64_t>() + kIdOffset;
      }
    }
    out.path = swapplan::testing::TempDir() + "/names_named.json";
    std::ofstream(out.path) << d.dump();
    return out;
  }();
  return t;
}

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Text rule (above): the unlabelled occurrences, one line each.
std::string BareIdsInText(const std::string& text, const std::map<uint64_t, std::string>& names) {
  std::string problems;
  for (size_t i = 0; i < text.size();) {
    if (!IsDigit(text[i]) || (i > 0 && (IsDigit(text[i - 1]) || text[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t e = i;
    while (e < text.size() && IsDigit(text[e])) ++e;
    const std::string num = text.substr(i, e - i);
    const size_t begin = i;
    i = e;
    if (num.size() > 9) continue;
    auto f = names.find(std::stoull(num));
    if (f == names.end()) continue;
    const std::string& name = f->second;
    const std::string short_form = "tensor " + num + " '" + name + "'";
    const std::string cell_form = name + " (" + num + ")";
    const bool is_short = begin >= 7 && text.compare(begin - 7, short_form.size(), short_form) == 0;
    const bool is_cell = begin >= name.size() + 2 &&
                         text.compare(begin - name.size() - 2, cell_form.size(), cell_form) == 0;
    if (!is_short && !is_cell) {
      const size_t from = begin >= 40 ? begin - 40 : 0;
      problems += "bare id " + num + " (" + name + ") in: ..." + text.substr(from, e + 20 - from) +
                  "...\n";
    }
  }
  return problems;
}

// JSON rule (above).
void BareIdsInJson(const json& j, const std::map<uint64_t, std::string>& names,
                   const std::string& where, std::string* problems) {
  auto known = [&](const json& v) -> const std::string* {
    if (!v.is_number_unsigned() && !v.is_number_integer()) return nullptr;
    if (v.is_number_integer() && v.get<int64_t>() < 0) return nullptr;
    auto f = names.find(v.get<uint64_t>());
    return f == names.end() ? nullptr : &f->second;
  };
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string* name = known(it.value());
      if (name != nullptr) {
        bool labelled = false;
        for (auto s = j.begin(); s != j.end(); ++s) {
          if (s.value().is_string() && s.value().get<std::string>().find(*name) != std::string::npos) {
            labelled = true;
          }
        }
        if (!labelled) *problems += where + "." + it.key() + ": bare id of " + *name + "\n";
      }
      BareIdsInJson(it.value(), names, where + "." + it.key(), problems);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string* name = known(j[i]);
      if (name != nullptr) *problems += where + "[" + std::to_string(i) + "]: bare id of " + *name + "\n";
      BareIdsInJson(j[i], names, where + "[" + std::to_string(i) + "]", problems);
    }
  }
}

std::string BareIdsInJsonText(const std::string& text, const std::map<uint64_t, std::string>& names) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return "not JSON\n";
  std::string problems;
  BareIdsInJson(j, names, "$", &problems);
  return problems;
}

// Runs `args` (the trace path substituted for TRACE), expects exit code
// `exit_code`, and applies the text or JSON rule to stdout and stderr.
// `lists_tensors`: the output names at least one activation ("mb0."), so the
// scan is not vacuous.
void Scan(const std::string& args, int exit_code, bool is_json = false,
          bool lists_tensors = true) {
  const NamedTrace& t = Named();
  std::string cmd = args;
  const size_t at = cmd.find("TRACE");
  if (at != std::string::npos) cmd.replace(at, 5, "'" + t.path + "'");
  CliRun r = Swapplan(cmd);
  INFO("swapplan " << cmd << "\nstderr: " << r.err);
  CHECK(r.exit_code == exit_code);
  CHECK(BareIdsInText(r.err, t.names) == "");
  if (lists_tensors) CHECK(r.out.find("mb0.") != std::string::npos);
  if (is_json) {
    CHECK(BareIdsInJsonText(r.out, t.names) == "");
  } else {
    CHECK(BareIdsInText(r.out, t.names) == "");
  }
}

std::string Tmp(const std::string& name) { return swapplan::testing::TempDir() + "/" + name; }

// A policy for TRACE at a 12 MiB device (chameleon), made once.
const std::string& PolicyFile() {
  static const std::string p = [] {
    const std::string path = Tmp("names_policy.json");
    CliRun r = Swapplan("plan '" + Named().path + "' --device-memory 12MiB -o '" + path + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return path;
  }();
  return p;
}

TEST_CASE("the scanner finds a bare id in text and in JSON", "[cli][names]") {
  const std::map<uint64_t, std::string> names = {{900011, "layers.3.mlp.silu"}};
  // Labelled forms pass.
  CHECK(BareIdsInText("item 1 (tensor 900011 'layers.3.mlp.silu')", names).empty());
  CHECK(BareIdsInText("layers.3.mlp.silu (900011)  100", names).empty());
  // Other numbers pass: not an id, part of a longer number or a decimal.
  CHECK(BareIdsInText("op 11, 9000110 bytes, 1.900011 s", names).empty());
  // Bare ids fail.
  CHECK(!BareIdsInText("item 1 (tensor 900011)", names).empty());
  CHECK(!BareIdsInText("900011   100 B", names).empty());
  CHECK(!BareIdsInText("other.name (900011)", names).empty());
  CHECK(BareIdsInJsonText(R"({"tensor_id": 900011, "label": "layers.3.mlp.silu → 100 B"})", names)
            .empty());
  CHECK(!BareIdsInJsonText(R"({"tensor_id": 900011, "size_bytes": 100})", names).empty());
  CHECK(!BareIdsInJsonText(R"({"tensors": [900011]})", names).empty());
}

TEST_CASE("inspect and curve name tensors", "[cli][names]") {
  Scan("inspect TRACE", 0);
  Scan("inspect TRACE --json", 0, true);
  Scan("curve TRACE --json", 0, true, /*lists_tensors=*/false);
}

TEST_CASE("plan names tensors in its tables, decisions and JSON", "[cli][names]") {
  Scan("plan TRACE --device-memory 12MiB --explain", 0);
  Scan("plan TRACE --device-memory 12MiB --json", 0, true);
  Scan("plan TRACE --device-memory 12MiB --explain --json", 0, true);
}

TEST_CASE("check names the tensors of its violations", "[cli][names]") {
  // A doctored policy: item 0's swap-in comes after its first use (a use
  // while off device, naming the item's tensor).
  json p = json::parse(ReadFile(PolicyFile()));
  REQUIRE(!p["items"].empty());
  json& it = p["items"][0];
  it["swap_in_op"] = it["first_use_op"].get<int>() + 1;
  const std::string bad = Tmp("names_policy_bad.json");
  std::ofstream(bad) << p.dump();
  Scan("check TRACE '" + PolicyFile() + "'", 0, false, /*lists_tensors=*/false);
  Scan("check TRACE '" + bad + "'", 2);
  Scan("check TRACE '" + bad + "' --json", 2, true);
}

TEST_CASE("simulate names tensors in its stalls, JSON and Chrome timeline", "[cli][names]") {
  const std::string timeline = Tmp("names_timeline.json");
  // The chameleon policy stalls nowhere: no tensor in the text or JSON.
  Scan("simulate TRACE '" + PolicyFile() + "' --timeline '" + timeline + "'", 0, false, false);
  Scan("simulate TRACE '" + PolicyFile() + "' --json", 0, true, false);
  std::string problems;
  BareIdsInJson(json::parse(ReadFile(timeline)), Named().names, "$", &problems);
  CHECK(problems == "");
  CHECK(ReadFile(timeline).find("mb0.layers.") != std::string::npos);
  // An LRU run with stalls: its top-stalls table names the waited-for tensor.
  Scan("compare TRACE --device-memory 12MiB --planners lru --save-policies '" + Tmp("names_lru") +
           "'",
       0);
  Scan("simulate TRACE '" + Tmp("names_lru") + "/lru.json' --json", 0, true);
  Scan("simulate TRACE '" + Tmp("names_lru") + "/lru.json'", 0);
  // Passive swaps of Algorithm 3 on a smaller device: stall sites name them.
  const std::string small = "simulate TRACE '" + Tmp("names_lru") +
                            "/lru.json' --device-memory 11MiB --oom-handling algorithm3";
  Scan(small, 0);
  Scan(small + " --json", 0, true);
}

TEST_CASE("compare, advise and report name tensors", "[cli][names]") {
  Scan("compare TRACE --device-memory 12MiB", 0);
  Scan("compare TRACE --device-memory 12MiB --json", 0, true);
  Scan("advise TRACE --device-memory 12MiB", 0);
  Scan("advise TRACE --device-memory 12MiB --json", 0, true);
  const std::string html = Tmp("names_report.html");
  Scan("report TRACE --device-memory 12MiB -o '" + html + "'", 0, false, /*lists_tensors=*/false);
  const std::string page = ReadFile(html);
  const size_t a = page.find("id=\"swapplan-data\">");
  REQUIRE(a != std::string::npos);
  const size_t b = page.find("</script>", a);
  std::string problems;
  BareIdsInJson(json::parse(page.substr(a + 19, b - a - 19)), Named().names, "$", &problems);
  CHECK(problems == "");
  CHECK(page.find("mb0.layers.") != std::string::npos);  // the swapped tensors' labels
}

TEST_CASE("replay names tensors in its rows, item reports and JSON", "[cli][names]") {
  const std::string common =
      "replay TRACE --device-memory 12MiB --warmup-iterations 0 --genpolicy-iterations 1 ";
  Scan(common + "--explain 2", 0);
  Scan(common + "--explain 2 --json", 0, true);
}

TEST_CASE("whatif labels tensors of the synthesized steps", "[cli][names]") {
  // The synthesized traces are not renumbered: dense ids 0.. would match op
  // indices, so here the rule is that no "tensor N" appears unnamed.
  CliRun r = Swapplan(
      "whatif --model gpt2 --layers 2 --hidden 64 --heads 2 --ffn 256 --vocab 256 --seq 512 "
      "--device-memory 12MiB --scale batch --max-value 8");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  for (size_t at = r.out.find("tensor "); at != std::string::npos;
       at = r.out.find("tensor ", at + 1)) {
    size_t e = at + 7;
    while (e < r.out.size() && IsDigit(r.out[e])) ++e;
    if (e > at + 7) CHECK(r.out.compare(e, 2, " '") == 0);
  }
}

TEST_CASE("the bundled traces name their activations by module path", "[cli][names]") {
  // traces/README.md: recorded traces carry the recorder's module-path
  // names (merged by scripts/merge_trace_names.py), synthesized ones the
  // synthesizer's "mb<k>.layers.<l>." paths. Per file: one activation named
  // as its module made it.
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"gpt2_small.json.gz", "blocks.0.ln1.native_layer_norm"},
      {"llama_small.json.gz", "layers.0.attention_norm.pow"},
      {"resnet18.json.gz", "bn1.native_batch_norm"},
      {"bilstm.json.gz", "embedding.embedding"},
      {"loss_scale_validation.json.gz", "features.0.convolution"},
      {"llama2-7b-4layers-dp8-seq4096.trace.gz", "mb0.layers.3.attn.qkv"}};
  for (const auto& [file, name] : expected) {
    INFO(file << ": " << name);
    absl::StatusOr<swapplan::Trace> t =
        swapplan::ReadTrace(std::string(SWAPPLAN_SOURCE_ROOT) + "/traces/" + file);
    REQUIRE(t.ok());
    bool found = false;
    for (swapplan::TensorId i = 0; i < t->num_tensors() && !found; ++i) {
      found = t->tensor(i).kind == swapplan::TensorKind::kActivation && t->tensor_name(i) == name;
    }
    CHECK(found);
  }
}

}  // namespace
