// The text and JSON forms of a step's anatomy (curve/step_anatomy.h), shared
// by `inspect` and `advise`: what the unswapped peak is made of (bytes by
// tensor kind, the largest tensors) and, for a first step (the optimizer
// creates its state in it), the steady-state estimate and what it needs.
//
//   for (const std::string& line : AnatomyLines(trace, curve, anatomy, budget)) ...
//
// O(kinds + listed tensors).
#ifndef SWAPPLAN_CLI_STEP_ANATOMY_TEXT_H_
#define SWAPPLAN_CLI_STEP_ANATOMY_TEXT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/step_anatomy.h"
#include "swapplan/trace/trace.h"

namespace swapplan::cli {

// (label, text) rows, labels of at most 10 characters: "peak holds" (kinds at the peak op, largest tensors),
// and for a first step "first step" (the state created) and "steady"
// (the estimate; against `budget_bytes` when >= 0: fits, or over by how
// much, and which budget a steady-state step needs without swapping).
std::vector<std::pair<std::string, std::string>> AnatomyLines(const Trace& trace,
                                                              const MemoryCurve& curve,
                                                              const StepAnatomy& a,
                                                              int64_t budget_bytes);

// {"peak_bytes_by_kind": {...}, "first_step": null | {...}}.
nlohmann::json AnatomyJson(const Trace& trace, const StepAnatomy& a);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_STEP_ANATOMY_TEXT_H_
