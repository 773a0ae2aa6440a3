// The calibrated peaks of tier 3 as a device spec for the roofline reports: the CPU
// engine's (and the GPU backend's) own traces are measured against what this machine
// was measured to do, not a datasheet.
#ifndef TIERSCOPE_INSPECT_CALIBRATED_SPEC_H_
#define TIERSCOPE_INSPECT_CALIBRATED_SPEC_H_

#include "analysis/device_specs.h"
#include "inspect/calibration.h"

namespace tierscope {

// FP32 FMA, BF16 dot (or tensor-core) and INT8 dot peaks and the triad's bandwidth, all
// threads; the source names the calibration.
DeviceSpec CalibratedDeviceSpec(const MachinePeaks& peaks);

}  // namespace tierscope

#endif  // TIERSCOPE_INSPECT_CALIBRATED_SPEC_H_
