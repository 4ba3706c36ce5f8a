// The quality baseline file of eval/regress.h: parsing with path-naming
// errors, and the canonical JSON form.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "swapplan/eval/compare.h"
#include "swapplan/eval/regress.h"

#include <algorithm>
#include "swapplan/planners/planner.h"
#include "swapplan/planners/registry.h"
#include "swapplan/util/error.h"
#include "swapplan/util/file.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"
#include "swapplan/util/utf8.h"

namespace swapplan {
namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;  // keeps the file in reading order

constexpr char kFormat[] = "swapplan-quality";
constexpr int kFormatVersion = 1;

class Parser {
 public:
  explicit Parser(const std::string& source) : source_(source) {}

  // "FILE: JSON-PATH: what [rule]", malformed input (exit 2), the rule also
  // as the status's payload (util/error.h), as the trace and policy readers'.
  absl::Status Fail(const std::string& path, absl::string_view what,
                    absl::string_view rule = "baseline-schema") const {
    // The path is built from the file's keys: escaped, so that a key with a
    // control character cannot break the message over lines (issue 19).
    return WithRule(Error(ErrorKind::kMalformedInput,
                          absl::StrCat(source_, ": ", EscapeForMessage(path, 200), ": ", what,
                                       " [", rule, "]")),
                    rule);
  }

  absl::StatusOr<std::string> String(const Json& j, const std::string& path) const {
    if (!j.is_string()) return Fail(path, "expected a string");
    return j.get<std::string>();
  }
  absl::StatusOr<int64_t> Int(const Json& j, const std::string& path) const {
    if (!j.is_number_integer()) return Fail(path, "expected an integer");
    return j.get<int64_t>();
  }
  absl::StatusOr<int64_t> NonNegative(const Json& j, const std::string& path) const {
    SWAPPLAN_ASSIGN_OR_RETURN(int64_t v, Int(j, path));
    if (v < 0) return Fail(path, absl::StrCat(v, " is negative; must be >= 0"), "out-of-range");
    return v;
  }
  absl::StatusOr<double> Number(const Json& j, const std::string& path) const {
    if (!j.is_number()) return Fail(path, "expected a number");
    return j.get<double>();
  }
  absl::StatusOr<bool> Bool(const Json& j, const std::string& path) const {
    if (!j.is_boolean()) return Fail(path, "expected true or false");
    return j.get<bool>();
  }

  // A size / bandwidth / duration as text, checked by its parser.
  template <typename T>
  absl::StatusOr<std::string> Unit(const Json& j, const std::string& path,
                                   absl::StatusOr<T> (*parse)(absl::string_view)) const {
    SWAPPLAN_ASSIGN_OR_RETURN(std::string s, String(j, path));
    absl::StatusOr<T> v = parse(s);
    if (!v.ok()) return Fail(path, v.status().message());
    return s;
  }

  absl::StatusOr<QualityResult> Result(const Json& j, const std::string& path) const {
    if (!j.is_object()) return Fail(path, "expected an object");
    QualityResult r;
    bool has_feasible = false, has_time = false;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string p = path + "." + it.key();
      if (it.key() == "feasible") {
        SWAPPLAN_ASSIGN_OR_RETURN(r.feasible, Bool(it.value(), p));
        has_feasible = true;
      } else if (it.key() == "iteration_time_ns") {
        SWAPPLAN_ASSIGN_OR_RETURN(r.iteration_time_ns, Int(it.value(), p));
        if (r.iteration_time_ns <= 0) return Fail(p, "must be > 0");
        has_time = true;
      } else {
        return Fail(p, "unknown field", "unknown-field");
      }
    }
    if (!has_feasible) return Fail(path, "missing \"feasible\"");
    if (r.feasible && !has_time) return Fail(path, "a feasible result needs iteration_time_ns");
    if (!r.feasible && has_time) return Fail(path, "an infeasible result has no iteration time");
    return r;
  }

  absl::StatusOr<TraceIdentity> Identity(const Json& j, const std::string& path) const {
    if (!j.is_object()) return Fail(path, "expected an object");
    TraceIdentity id;
    int found = 0;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string p = path + "." + it.key();
      if (it.key() == "op_sequence_hash") {
        const Json& v = it.value();
        const std::string* h = v.is_string() ? v.get_ptr<const std::string*>() : nullptr;
        if (h == nullptr || h->rfind("0x", 0) != 0 ||
            !absl::SimpleHexAtoi(absl::string_view(*h).substr(2), &id.op_sequence_hash)) {
          return Fail(p, "expected a hex string such as \"0x1f\"");
        }
      } else if (it.key() == "iteration_ops") {
        // Never truncated to 32 bits (issue 19): 2^32 + 13 is not 13.
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t v, Int(it.value(), p));
        if (v < 0 || v > INT32_MAX) {
          return Fail(p, absl::StrCat(v, " is out of range [0, 2147483647]"), "out-of-range");
        }
        id.iteration_ops = static_cast<int32_t>(v);
      } else if (it.key() == "unswapped_peak_bytes") {
        SWAPPLAN_ASSIGN_OR_RETURN(id.unswapped_peak_bytes, NonNegative(it.value(), p));
      } else if (it.key() == "persistent_bytes") {
        SWAPPLAN_ASSIGN_OR_RETURN(id.persistent_bytes, NonNegative(it.value(), p));
      } else {
        return Fail(p, "unknown field", "unknown-field");
      }
      ++found;
    }
    if (found != 4) return Fail(path, "needs op_sequence_hash, iteration_ops, "
                                      "unswapped_peak_bytes and persistent_bytes");
    return id;
  }

  absl::StatusOr<QualityEntry> Entry(const Json& j, const std::string& path) const {
    if (!j.is_object()) return Fail(path, "expected an object");
    QualityEntry e;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      const Json& v = it.value();
      const std::string p = path + "." + key;
      if (key == "trace") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.trace, String(v, p));
      } else if (key == "iteration") {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, Int(v, p));
        if (x < 0 || x > INT32_MAX) return Fail(p, "must be a non-negative iteration index");
        e.iteration = static_cast<int32_t>(x);
      } else if (key == "oversubscription") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.oversubscription, Number(v, p));
        if (!(e.oversubscription >= 1)) return Fail(p, "must be >= 1");
      } else if (key == "device_memory") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.device_memory, Unit(v, p, &ParseBytes));
      } else if (key == "reserve") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.reserve, Unit(v, p, &ParseBytes));
      } else if (key == "bandwidth") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.bandwidth, Unit(v, p, &ParseBandwidth));
      } else if (key == "h2d_bandwidth") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.h2d_bandwidth, Unit(v, p, &ParseBandwidth));
      } else if (key == "d2h_bandwidth") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.d2h_bandwidth, Unit(v, p, &ParseBandwidth));
      } else if (key == "latency") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.latency, Unit(v, p, &ParseDurationNs));
      } else if (key == "half_duplex") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.half_duplex, Bool(v, p));
      } else if (key == "default_set") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.default_set, Bool(v, p));
      } else if (key == "planners") {
        if (!v.is_array()) return Fail(p, "expected an array of planner names");
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string pi = absl::StrCat(p, "[", i, "]");
          SWAPPLAN_ASSIGN_OR_RETURN(std::string name, String(v[i], pi));
          if (FindPlanner(name) == nullptr) {
            return Fail(pi,
                        absl::StrCat("unknown planner '", EscapeForMessage(name),
                                     "' (known: ", PlannerNames(), ")"),
                        "unknown-planner");
          }
          e.planners.push_back(name);
        }
      } else if (key == "planner_options") {
        if (!v.is_array()) return Fail(p, "expected an array of \"PLANNER.NAME=VALUE\" strings");
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string pi = absl::StrCat(p, "[", i, "]");
          SWAPPLAN_ASSIGN_OR_RETURN(std::string text, String(v[i], pi));
          absl::StatusOr<CompareOptions::PlannerOption> po = ParsePlannerOption(text);
          if (!po.ok()) return Fail(pi, po.status().message(), "bad-planner-option");
          // The value is checked now, by the planner's own parser, whether
          // or not the planner runs (issue 19: a bad option of a planner an
          // entry leaves out was ignored).
          absl::StatusOr<std::unique_ptr<Planner>> planner = CreatePlanner(po->planner);
          if (!planner.ok()) return Fail(pi, planner.status().message(), "bad-planner-option");
          if (absl::Status st = (*planner)->SetOption(po->name, po->value); !st.ok()) {
            return Fail(pi, st.message(), "bad-planner-option");
          }
          e.planner_options.push_back(text);
        }
      } else if (key == "at_most") {
        if (!v.is_array()) return Fail(p, "expected an array of \"A<=B\" strings");
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string pi = absl::StrCat(p, "[", i, "]");
          SWAPPLAN_ASSIGN_OR_RETURN(std::string text, String(v[i], pi));
          const size_t le = text.find("<=");
          if (le == std::string::npos) return Fail(pi, "expected \"A<=B\" (planner names)");
          for (const std::string& name : {text.substr(0, le), text.substr(le + 2)}) {
            if (FindPlanner(name) == nullptr) {
              return Fail(pi,
                          absl::StrCat("unknown planner '", EscapeForMessage(name),
                                       "' (known: ", PlannerNames(), ")"),
                          "unknown-planner");
            }
          }
          e.at_most.push_back(text);
        }
      } else if (key == "trace_identity") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.identity, Identity(v, p));
      } else if (key == "budget_bytes") {
        SWAPPLAN_ASSIGN_OR_RETURN(e.budget_bytes, NonNegative(v, p));
        // Written only when positive (0 means "not recorded" and would
        // silently skip the comparison with the budget regress computes).
        if (e.budget_bytes == 0) {
          return Fail(p, "0 is not a recorded budget; must be > 0 (or absent)", "out-of-range");
        }
      } else if (key == "results") {
        if (!v.is_object()) return Fail(p, "expected an object of planner results");
        for (auto r = v.begin(); r != v.end(); ++r) {
          const std::string pr = p + "." + r.key();
          if (FindPlanner(r.key()) == nullptr) {
            return Fail(pr, absl::StrCat("unknown planner (known: ", PlannerNames(), ")"),
                        "unknown-planner");
          }
          SWAPPLAN_ASSIGN_OR_RETURN(e.results[r.key()], Result(r.value(), pr));
        }
      } else {
        return Fail(p, "unknown field", "unknown-field");
      }
    }
    if (e.trace.empty()) return Fail(path, "missing \"trace\"");
    if ((e.oversubscription > 0) == !e.device_memory.empty()) {
      return Fail(path, "give exactly one of \"oversubscription\" and \"device_memory\"");
    }
    if (!e.reserve.empty() && e.oversubscription > 0) {
      return Fail(path + ".reserve", "a reserve applies to device_memory, not to an "
                                     "oversubscription");
    }
    if (e.default_set && !e.planners.empty()) {
      return Fail(path + ".default_set", "give \"planners\" or \"default_set\", not both");
    }
    // The planners the entry runs (QualityEntryPlanners).
    const std::vector<std::string> run = QualityEntryPlanners(e);
    auto runs = [&](const std::string& name) {
      return std::find(run.begin(), run.end(), name) != run.end();
    };
    // Both planners of a relation must run for the entry.
    for (size_t i = 0; i < e.at_most.size(); ++i) {
      const std::string& rel = e.at_most[i];
      const size_t le = rel.find("<=");
      for (const std::string& name : {rel.substr(0, le), rel.substr(le + 2)}) {
        if (!runs(name)) {
          return Fail(absl::StrCat(path, ".at_most[", i, "]"),
                      absl::StrCat("planner '", name, "' does not run for this entry (add it to "
                                   "\"planners\")"),
                      "planner-not-run");
        }
      }
    }
    // So must the planner of every option: an option nothing reads is a
    // mistake, not a no-op.
    for (size_t i = 0; i < e.planner_options.size(); ++i) {
      const std::string& text = e.planner_options[i];
      const std::string name = text.substr(0, text.find('.'));
      if (!runs(name)) {
        return Fail(absl::StrCat(path, ".planner_options[", i, "]"),
                    absl::StrCat("planner '", EscapeForMessage(name),
                                 "' does not run for this entry (add it to \"planners\")"),
                    "planner-not-run");
      }
    }
    return e;
  }

 private:
  const std::string& source_;
};

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
  return buf;
}

}  // namespace

absl::StatusOr<QualityBaseline> ParseQualityBaseline(absl::string_view text,
                                                     const std::string& path) {
  Parser parser(path);
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // e.byte: the 1-based position where parsing stopped.
    return parser.Fail("$", absl::StrCat("not valid JSON at byte ", e.byte, " (",
                                         EscapeForMessage(e.what(), 200), ")"),
                       "json-syntax");
  } catch (const Json::exception& e) {  // a number past a double (1e400): out_of_range
    return parser.Fail("$", absl::StrCat("not valid JSON (", EscapeForMessage(e.what(), 200),
                                         ")"),
                       "json-number");
  }
  if (!j.is_object()) return parser.Fail("$", "expected an object");
  QualityBaseline b;
  b.path = path;
  bool has_format = false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string p = "$." + it.key();
    if (it.key() == "format") {
      SWAPPLAN_ASSIGN_OR_RETURN(std::string f, parser.String(it.value(), p));
      if (f != kFormat) return parser.Fail(p, absl::StrCat("expected \"", kFormat, "\""));
      has_format = true;
    } else if (it.key() == "format_version") {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t v, parser.Int(it.value(), p));
      if (v != kFormatVersion) {
        return parser.Fail(p, absl::StrCat("unsupported version ", v, " (expected ",
                                           kFormatVersion, ")"));
      }
    } else if (it.key() == "entries") {
      if (!it.value().is_array()) return parser.Fail(p, "expected an array");
      for (size_t i = 0; i < it.value().size(); ++i) {
        SWAPPLAN_ASSIGN_OR_RETURN(QualityEntry e,
                                  parser.Entry(it.value()[i], absl::StrCat(p, "[", i, "]")));
        b.entries.push_back(std::move(e));
      }
    } else {
      return parser.Fail(p, "unknown field", "unknown-field");
    }
  }
  if (!has_format) return parser.Fail("$", absl::StrCat("missing \"format\": \"", kFormat, "\""));
  return b;
}

absl::StatusOr<QualityBaseline> ReadQualityBaseline(const std::string& path) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> in, InputFile::Open(path));
  SWAPPLAN_ASSIGN_OR_RETURN(std::string text, in->ReadAll());
  return ParseQualityBaseline(text, path);
}

std::string QualityBaselineToJson(const QualityBaseline& b) {
  OJson entries = OJson::array();
  for (const QualityEntry& e : b.entries) {
    OJson j;
    j["trace"] = e.trace;
    if (e.iteration != 0) j["iteration"] = e.iteration;
    if (e.oversubscription > 0) j["oversubscription"] = e.oversubscription;
    auto text = [&](const char* key, const std::string& v) {
      if (!v.empty()) j[key] = v;
    };
    text("device_memory", e.device_memory);
    text("reserve", e.reserve);
    text("bandwidth", e.bandwidth);
    text("h2d_bandwidth", e.h2d_bandwidth);
    text("d2h_bandwidth", e.d2h_bandwidth);
    text("latency", e.latency);
    if (e.half_duplex) j["half_duplex"] = true;
    if (!e.planners.empty()) j["planners"] = e.planners;
    if (e.default_set) j["default_set"] = true;
    if (!e.planner_options.empty()) j["planner_options"] = e.planner_options;
    if (!e.at_most.empty()) j["at_most"] = e.at_most;
    if (e.identity) {
      j["trace_identity"] = {{"op_sequence_hash", Hex(e.identity->op_sequence_hash)},
                             {"iteration_ops", e.identity->iteration_ops},
                             {"unswapped_peak_bytes", e.identity->unswapped_peak_bytes},
                             {"persistent_bytes", e.identity->persistent_bytes}};
    }
    if (e.budget_bytes > 0) j["budget_bytes"] = e.budget_bytes;
    if (!e.results.empty()) {
      OJson results = OJson::object();
      for (const auto& [name, r] : e.results) {
        OJson rj = {{"feasible", r.feasible}};
        if (r.feasible) rj["iteration_time_ns"] = r.iteration_time_ns;
        results[name] = std::move(rj);
      }
      j["results"] = std::move(results);
    }
    entries.push_back(std::move(j));
  }
  OJson doc = {{"format", kFormat}, {"format_version", kFormatVersion}, {"entries", entries}};
  return doc.dump(2) + "\n";
}

}  // namespace swapplan
