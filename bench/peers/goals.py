"""Issue 30's goals, each held against figures of one bench/peers run, each peer at its
best variant (peers.py's best_of). The targets depend on what the CPU can do, read from
`tierscope device` (the same run's binary): BF16 arithmetic (AVX512_BF16 or AMX), and the
INT8 dot product its INT8 kernels use (avx2, avx512_vnni, amx).

A goal whose figure is missing (a peer failed or is not installed, a sweep size failed or
was skipped) is "n/a", never met; a figure that is physically impossible (a FLOP share
above 100%) is flagged, not judged. A goal against a peer also says what it asks of the
engine: the FLOP rate the target throughput needs, as a share of the same run's calibrated
peak of the arithmetic tierscope's mode runs on (a peer may run on faster arithmetic: AMX
tiles for BF16, FP16 arithmetic); above 100% the goal is out of reach of that arithmetic,
and says so. A share of tierscope's own above 100% is flagged, not judged.
"""
from __future__ import annotations

FP32_PEERS = ("torch eager/batch-fp32", "torch compile/batch-fp32", "onnxruntime/batch-fp32", "openvino/batch-fp32")
INT8_PEERS = ("onnxruntime/batch-int8", "openvino/batch-int8")
BF16_PEERS = ("torch eager/batch-bf16", "openvino/batch-bf16")


def _best_peer(best: dict, groups: tuple) -> tuple[float, str]:
    """The fastest of `groups` that ran: (samples/s, "group (variant)"), or (nan, "")."""
    found = [(best[g]["samples_per_s"], f"{g} ({best[g]['variant']})") for g in groups if g in best]
    return max(found) if found else (float("nan"), "")


def cpu_targets(device: dict) -> dict:
    """What the CPU's arithmetic sets: BF16 math or not, and the INT8 speed-up to reach."""
    peaks = device.get("peaks", {})
    int8_dot = str(peaks.get("int8_dot", ""))
    fast_int8 = any(k in int8_dot for k in ("vnni", "amx"))
    return {"bf16_math": bool(peaks.get("bf16_dot")), "int8_dot": int8_dot or "unknown",
            "int8_target": 3.0 if fast_int8 else 2.0, "features": device.get("features", "")}


def peak_for(mode: str, device: dict) -> tuple[float, str]:
    """The calibrated peak (FLOP/s or OP/s, 2 a multiply-add) `tierscope device` measured for
    the arithmetic tierscope's `mode` runs on, and its name: FP32 FMA for fp32 and fp16
    (widened to FP32) and for bf16 without a BF16 dot product, the BF16 dot product (the
    AVX512_BF16 kernels' calibration) where the CPU has one, the INT8 dot product the INT8
    kernels use; nan when that peak is missing."""
    peaks = device.get("peaks", {})
    if mode == "batch-int8":
        return (peaks["int8_gops"] * 1e9, f"INT8 dot ({peaks.get('int8_dot', '?')})") if peaks.get("int8_gops") \
            else (float("nan"), "")
    if mode == "batch-bf16" and peaks.get("bf16_dot"):  # never the FP32 peak for BF16 arithmetic
        return (peaks["bf16_gflops"] * 1e9, "BF16 dot") if peaks.get("bf16_gflops") else (float("nan"), "")
    if mode in ("batch-fp32", "batch-fp16", "batch-bf16") and peaks.get("fp32_gflops"):
        return peaks["fp32_gflops"] * 1e9, "FP32 FMA"
    return float("nan"), ""


def needed_share(goal, peer_sps: float, flops_per_sample: float, mode: str, device: dict) -> tuple[float, str]:
    """The share of `mode`'s calibrated peak that `goal` x the peer's samples/s needs, and
    the peak's name: (nan, "") when a figure is missing."""
    peak, name = peak_for(mode, device)
    if goal is None or not (peer_sps == peer_sps and peak == peak and flops_per_sample > 0):
        return float("nan"), ""
    return goal * peer_sps * flops_per_sample / peak, name


def print_goals(label: str, best: dict, acc: dict, flops_per_sample: float, peak: float, device: dict,
                cliff: dict) -> list:
    def sps(group: str) -> float:
        return best[group]["samples_per_s"] if group in best else float("nan")

    minilm = label.startswith("all-MiniLM")
    cpu = cpu_targets(device)
    ts32, ts8, serial = sps("tierscope/batch-fp32"), sps("tierscope/batch-int8"), sps("tierscope/serial-fp32")
    ts_bf16, ts_fp16 = sps("tierscope/batch-bf16"), sps("tierscope/batch-fp16")
    peer32, peer32_name = _best_peer(best, FP32_PEERS)
    peer8, peer8_name = _best_peer(best, INT8_PEERS)
    peer16, peer16_name = _best_peer(best, BF16_PEERS)
    peer_f16, peer_f16_name = _best_peer(best, ("openvino/batch-fp16",))
    share = ts32 * flops_per_sample / peak
    # A peer goal's last field: (the mode whose peak it is held to, the peer's samples/s).
    goals = [("batch-fp32 share of the calibrated FP32 peak", share, 0.75,
              f"{ts32:.0f} x {flops_per_sample / 1e6:.1f} MFLOP / {peak / 1e9:.0f} GFLOP/s"),
             ("batch-fp32 / best FP32 peer", ts32 / peer32, 1.5 if minilm else 2.0, peer32_name,
              ("batch-fp32", peer32)),
             ("serial-fp32 / batch-fp32", serial / ts32, 0.9, "")]
    if cpu["bf16_math"]:
        torch16 = sps("torch eager/batch-bf16")
        goals.append(("batch-bf16 / torch bf16 (BF16 arithmetic here)", ts_bf16 / torch16, 1.5,
                      best.get("torch eager/batch-bf16", {}).get("variant", ""), ("batch-bf16", torch16)))
    else:
        goals.append(("batch-bf16 / batch-fp32 (no BF16 arithmetic here)", ts_bf16 / ts32, 0.95, ""))
    # No CPU the engine runs on computes in FP16 (it widens FP16 weights to FP32).
    goals.append(("batch-fp16 / batch-fp32 (no FP16 arithmetic in the engine)", ts_fp16 / ts32, 0.95, ""))
    goals.append(("batch-bf16 cosine to FP32", acc.get("tierscope bf16", (float("nan"),))[0], 0.999,
                  "tierscope run --dtype bf16"))
    # What the instructions allow: the INT8 GEMMs can outrun the FP32 ones by at most the
    # ratio of the calibrated peaks (Zen 1's vpmaddubsw + vpmaddwd: about 1x FP32's FMA).
    peaks = device.get("peaks", {})
    dot_ratio = (peaks["int8_gops"] / peaks["fp32_gflops"]) if peaks.get("int8_gops") and peaks.get("fp32_gflops") \
        else float("nan")
    goals.append((f"batch-int8 / batch-fp32 (INT8 dot: {cpu['int8_dot']})", ts8 / ts32, cpu["int8_target"],
                  f"INT8 dot peak / FP32 FMA peak = {dot_ratio:.2f}" +
                  (": the goal is beyond the instructions' ratio" if dot_ratio < cpu["int8_target"] else "")))
    # all-MiniLM-L6-v2: 1.5x the best peer in each precision; the tiny model's are shown.
    goals.append(("batch-int8 / best INT8 peer", ts8 / peer8, 1.5 if minilm else None, peer8_name,
                  ("batch-int8", peer8)))
    goals.append(("batch-bf16 / best BF16 peer", ts_bf16 / peer16, 1.5 if minilm else None, peer16_name,
                  ("batch-bf16", peer16)))
    if peer_f16 == peer_f16:  # OpenVINO's default picks FP16 on CPUs with FP16 arithmetic
        goals.append(("batch-fp16 / best FP16 peer", ts_fp16 / peer_f16, 1.5 if minilm else None, peer_f16_name,
                      ("batch-fp16", peer_f16)))
    for mode in ("batch-fp32", "batch-int8"):
        by_batch = cliff.get(mode) or {}
        if not by_batch:
            goals.append((f"{mode}: worst batch of the sweep / best", float("nan"), 0.9, "no sweep (--cliff-batches)"))
            continue
        failed = [b for b, v in by_batch.items() if v != v]
        if failed:  # a size that failed is no figure: the goal is n/a, never met
            goals.append((f"{mode}: worst batch of {min(by_batch)}-{max(by_batch)} / best", float("nan"), 0.9,
                          "failed at batch " + ", ".join(map(str, failed))))
            continue
        top = max(by_batch.values())
        worst = min(by_batch, key=by_batch.get)
        goals.append((f"{mode}: worst batch of {min(by_batch)}-{max(by_batch)} / best", by_batch[worst] / top, 0.9,
                      f"b{worst} {by_batch[worst]:.0f}/s; " +
                      ", ".join(f"b{b} {v:.0f}" for b, v in sorted(by_batch.items()))))
    print(f"  goals ({'MiniLM' if minilm else 'tiny'}; CPU {cpu['features']}, BF16 arithmetic "
          f"{'yes' if cpu['bf16_math'] else 'no'}, INT8 dot {cpu['int8_dot']}):")
    out = []
    for name, value, goal, how, *peer in goals:
        need, peak_name = needed_share(goal, peer[0][1], flops_per_sample, peer[0][0], device) if peer else (
            float("nan"), "")
        if value != value:
            verdict = "n/a"
        elif name.startswith("batch-fp32 share") and value > 1.0:
            verdict = "IMPOSSIBLE (above the peak: the peak or the FLOP count is wrong)"
        elif goal is None:
            verdict = "shown (no goal for this model)"
        else:
            verdict = "met" if value >= goal else f"NOT met ({value / goal:.0%} of goal)"
            ours = need * value / goal  # tierscope's own share of that peak
            if ours > 1.0:
                verdict = (f"IMPOSSIBLE (tierscope at {ours:.0%} of its {peak_name} peak: the peak or the FLOP "
                           f"count is wrong)")
            elif value < goal and need > 1.0:
                verdict = (f"NOT met ({value / goal:.0%} of goal; out of reach of the {peak_name} arithmetic "
                           f"tierscope runs on: it needs {need:.0%} of that peak, tierscope runs at {ours:.0%})")
            elif need == need:
                how += f"; the goal needs {need:.0%} of the {peak_name} peak, tierscope runs at {ours:.0%}"
        digits = 6 if "cosine" in name else 3  # a cosine's shortfall shows in the 4th place
        target = "" if goal is None else f"(goal >= {goal:.{min(digits, 3)}f})"
        print(f"    {name:52s} {value:9.{digits}f} {target:15s} {verdict}{'  ' + how if how else ''}")
        out.append({"goal": name, "value": value, "target": goal, "verdict": verdict, "against": how,
                    "needed_peak_share": need if need == need else None})
    return out


def print_agreement(best: dict) -> list:
    """Issue 26: `bench --engine torch` agrees with the same eager call, timed alike."""
    workload = best.get("tierscope-torch/batch-fp32", {}).get("samples_per_s", float("nan"))
    alike = best.get("torch-alike/batch-fp32", {}).get("samples_per_s", float("nan"))
    if workload != workload or alike != alike:
        return []
    ratio = workload / alike
    verdict = "met" if 0.9 <= ratio <= 1.1 else "NOT met"
    print(f"    {'bench --engine torch / the same eager call':52s} {ratio:7.3f} (goal 0.90-1.10) {verdict}")
    return [{"goal": "bench --engine torch / the same eager call", "value": ratio, "target": "0.90-1.10",
             "verdict": verdict, "against": best["torch-alike/batch-fp32"]["variant"]}]


def print_int8_accuracy(best: dict, acc: dict, describe) -> None:
    """tierscope's INT8 against the best INT8 peer's, both as cosine to FP32."""
    for group in INT8_PEERS:
        if group not in best:
            continue
        engine = "onnxruntime int8" if group.startswith("onnxruntime") else "openvino"
        key = f"{engine} {best[group]['variant']}"
        if key in acc and "tierscope int8" in acc:
            ours, theirs = acc["tierscope int8"], acc[key]
            print(f"    int8 accuracy vs FP32: tierscope {describe(ours)}; {key} {describe(theirs)} -> "
                  f"{'equal or better' if ours[0] >= theirs[0] else 'WORSE'}")
