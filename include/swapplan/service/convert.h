// Conversions between the library's simulator, checker and device types and the
// planner service's messages (proto/planner_service.proto), used by the
// server (service/requests) and by the CLI's --server (cli/remote.h), so
// that both sides agree field by field and a remote `swapplan simulate`
// renders exactly what a local one does.
//
//   v1::SimulateResponse out;
//   SimulationToProto(result, &out);                 // server
//   SimulationResult back = SimulationFromProto(out);  // client: == result
//                                                      // but for timeline and
//                                                      // bytes_in_use
//
// Plain functions, O(size of the message); any thread.
#ifndef SWAPPLAN_SERVICE_CONVERT_H_
#define SWAPPLAN_SERVICE_CONVERT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "planner_service.pb.h"
#include "swapplan/device/device_model.h"
#include "swapplan/planners/advisor/search.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {

// Every field of `m`, its memory tiers included, as the service's messages
// carry it (the policy schema's swapplan.proto.DeviceModel), and back: the
// policy format's own conversion (src/policy/policy_codec.h), so a device
// travels exactly as a policy file records it. O(tiers).
void DeviceModelToProto(const DeviceModel& m, proto::DeviceModel* out);
DeviceModel DeviceModelFromProto(const proto::DeviceModel& p);
// The memory tiers of `m` into spec->tiers (replacing them), and the tiers
// of a spec, in order.
void TiersToSpec(const DeviceModel& m, v1::DeviceSpec* spec);
std::vector<MemoryTier> TiersFromSpec(const v1::DeviceSpec& spec);

// The simulator's settings of `o` that SimulatorSettings carries, and back
// onto `o` (its device is left alone). Requires top_stall_ops >= 0.
void SimulatorSettingsToProto(const SimulatorOptions& o, v1::SimulatorSettings* out);
void ApplySimulatorSettings(const v1::SimulatorSettings& s, SimulatorOptions* o);

// Every number of `r` into the response (its summary fields and `detail`);
// the timeline and the per-op bytes in use are not carried.
void SimulationToProto(const SimulationResult& r, v1::SimulateResponse* out);
// The result the response describes. InvalidArgument (kMalformedInput)
// for an enum value this build does not know (a newer server).
absl::StatusOr<SimulationResult> SimulationFromProto(const v1::SimulateResponse& p);

// Every figure and violation of the checker's report, both ways (`clean`
// is the report's clean()). CheckFromProto: Internal for a violation kind
// this build does not know (a newer server), naming it.
void CheckToProto(const CheckReport& r, v1::CheckResponse* out);
absl::StatusOr<CheckReport> CheckFromProto(const v1::CheckResponse& p);

// One generation of the Advisor's search, both ways.
void GenerationToProto(const GenerationStats& g, v1::SearchProgress* out);
GenerationStats GenerationFromProto(const v1::SearchProgress& p);

// Every figure of the Advisor's result into `out` (all but `plan`, which
// the caller fills with the policy, and the chromosome and swap plan behind
// it); and back (one island, no chromosome). SearchFromProto fails as
// SimulationFromProto does.
void SearchToProto(const SearchResult& r, v1::SearchResult* out);
absl::StatusOr<SearchResult> SearchFromProto(const v1::SearchResult& p);

}  // namespace swapplan

#endif  // SWAPPLAN_SERVICE_CONVERT_H_
