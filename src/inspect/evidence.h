// Builds tier-3 KernelEvidence from each source: a replayed launch on tierscope's engine
// (with the machine's calibrated peaks), an Nsight Compute CSV kernel, and a kernel of a
// tier-2 trace (its duration, share of device time and Kineto grid/block args).
#ifndef TIERSCOPE_INSPECT_EVIDENCE_H_
#define TIERSCOPE_INSPECT_EVIDENCE_H_

#include <string>

#include "inspect/calibration.h"
#include "inspect/kernel_inspector.h"
#include "inspect/sections.h"
#include "trace/ncu_import.h"
#include "trace/trace.h"

namespace tierscope {

// `props` is the replaying device's: on a GPU the launch's SMs, its residency
// (theoretical occupancy, waves) and the kernel the device really ran come from it and
// from the launch's device records.
KernelEvidence EvidenceFromReplay(const ProfiledLaunch& launch, const KernelInspector& inspector,
                                  const MachinePeaks& peaks, const DeviceProps& props,
                                  const std::string& device);

KernelEvidence EvidenceFromNcu(const NcuKernel& kernel, const std::string& source);

// The kernel named `name` in a trace ("" or "regex:..." as for -k: the hottest match);
// NotFound, listing the hottest kernels, when none matches.
StatusOr<KernelEvidence> EvidenceFromTrace(const Trace& trace, const std::string& name);

// An ncu kernel's evidence completed by the same workload's tier-2 trace: its share of
// kernel time, its rank and its duration spread over the trace's launches (ncu profiles
// one launch; the trace times them all).
void AddTraceEvidence(KernelEvidence& evidence, const KernelEvidence& from_trace);

// "(256, 1, 1)", "[256, 1, 1]", "256" -> Dim3; nullopt if it is not that.
std::optional<Dim3> ParseDim3(std::string_view text);

}  // namespace tierscope

#endif  // TIERSCOPE_INSPECT_EVIDENCE_H_
