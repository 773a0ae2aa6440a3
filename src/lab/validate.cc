// FP16, BF16 and (on the CPU) INT8 against FP32 on the same inputs, with tolerances.
#include "lab/validate.h"

#include <cmath>
#include <cstdio>

#include "workload/bench.h"
#include "tierscope/engine.h"

namespace tierscope {

OutputDiff CompareOutputs(const std::vector<float>& a, const std::vector<float>& b) {
  OutputDiff d;
  if (a.size() != b.size() || a.empty()) return d;
  double dot = 0, na = 0, nb = 0, sum_abs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i];
    d.nonfinite_reference += !std::isfinite(x);
    d.nonfinite_other += !std::isfinite(y);
    dot += x * y;
    na += x * x;
    nb += y * y;
    const double e = std::fabs(x - y);
    sum_abs += e;
    if (!(e <= d.max_abs)) d.max_abs = e;  // NaN propagates as a failure
  }
  d.cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0;
  d.mean_abs = sum_abs / static_cast<double>(a.size());
  return d;
}

PrecisionCheck CheckPrecision(const std::string& dtype, const OutputDiff& diff) {
  PrecisionCheck c;
  c.dtype = dtype;
  c.diff = diff;
  if (dtype == "fp16") {
    c.min_cosine = 0.9999;
    c.max_abs_limit = 0.1;
  } else {  // bf16 (8 significant bits), and int8: a few code steps a Linear
    c.min_cosine = 0.999;
    c.max_abs_limit = 0.5;
  }
  c.pass = diff.cosine >= c.min_cosine && diff.max_abs <= c.max_abs_limit &&
           std::isfinite(diff.mean_abs) && diff.nonfinite_reference == 0 && diff.nonfinite_other == 0;
  return c;
}

StatusOr<ValidationResult> RunValidation(const ValidateOptions& o) {
  if (o.batch_size < 1 || o.seq_len < 1) return InvalidArgument("--batch-size and --seq-len must be >= 1");
  TS_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(o.model_dir));
  std::vector<float> reference;
  ValidationResult r;
  BatchInput in;
  // INT8 is the CPU's lever (a GPU backend has no INT8 GEMM and says so).
  std::vector<DType> precisions = {DType::kF32, DType::kF16, DType::kBF16};
  if (o.device == "cpu") precisions.push_back(DType::kI8);
  for (DType t : precisions) {
    if (o.engine == "torch") {  // the same inputs through PyTorch, one unit a precision
      BenchOptions b;
      b.engine = "torch";
      b.python = o.python;
      b.timeout_s = o.timeout_s;
      b.model_dir = o.model_dir;
      b.mode = t == DType::kF32 ? "batch-fp32" : t == DType::kF16 ? "batch-fp16" : t == DType::kBF16 ? "batch-bf16"
                                                                                                : "batch-int8";
      b.batch_size = o.batch_size;
      b.seq_len = o.seq_len;
      b.seed = o.seed;
      b.threads = o.threads;
      b.device = o.device;
      b.warmup = 0;
      b.iterations = 1;
      b.keep_output = true;
      TS_ASSIGN_OR_RETURN(BenchReport rep, RunBench(b));
      if (t == DType::kF32) {
        reference = std::move(rep.output);
        continue;
      }
      r.checks.push_back(CheckPrecision(t == DType::kF16 ? "fp16" : t == DType::kBF16 ? "bf16" : "int8",
                                        CompareOutputs(reference, rep.output)));
      continue;
    }
    EngineOptions eo;
    eo.dtype = t;
    eo.threads = o.threads;
    eo.device = o.device;
    TS_ASSIGN_OR_RETURN(auto engine, BertEngine::Load(dir, eo));
    if (in.input_ids.empty()) {
      const BertConfig& cfg = engine->config();
      if (o.seq_len > cfg.max_position_embeddings) {
        return InvalidArgument("--seq-len " + std::to_string(o.seq_len) +
                               " exceeds the model's max_position_embeddings " +
                               std::to_string(cfg.max_position_embeddings));
      }
      // The inputs, the FP32 reference kept beside each precision's output, checked
      // before any of it is allocated.
      TS_ASSIGN_OR_RETURN(MemoryNeed need, engine->ForwardMemory(o.batch_size, o.seq_len, {}));
      need.host += static_cast<double>(o.batch_size) * static_cast<double>(o.seq_len) *
                   (8 + 4.0 * static_cast<double>(cfg.hidden_size));
      TS_RETURN_IF_ERROR(engine->CheckMemory(need, "--batch-size " + std::to_string(o.batch_size) +
                                                       " x --seq-len " + std::to_string(o.seq_len)));
      in = BatchInput{o.batch_size, o.seq_len,
                      BenchInputIds(o.seed, o.batch_size, o.seq_len, cfg.vocab_size), {}, {}};
    }
    TS_ASSIGN_OR_RETURN(ForwardOutput out, engine->Forward(in, ForwardOptions{}));
    if (t == DType::kF32) {
      reference = std::move(out.last_hidden_state);
      continue;
    }
    r.checks.push_back(CheckPrecision(t == DType::kF16 ? "fp16" : t == DType::kBF16 ? "bf16" : "int8",
                                      CompareOutputs(reference, out.last_hidden_state)));
  }
  r.pass = true;
  char buf[512];
  std::snprintf(buf, sizeof(buf), "validation: last_hidden_state [%lld, %lld, H], seed %llu, vs FP32\n",
                static_cast<long long>(o.batch_size), static_cast<long long>(o.seq_len),
                static_cast<unsigned long long>(o.seed));
  r.text = buf;
  r.json = {{"model_dir", dir}, {"engine", o.engine}, {"batch_size", o.batch_size}, {"seq_len", o.seq_len}, {"seed", o.seed},
            {"reference", "fp32"}, {"output", "last_hidden_state"}};
  for (const PrecisionCheck& c : r.checks) {
    r.pass = r.pass && c.pass;
    std::snprintf(buf, sizeof(buf),
                  "  %-5s cosine %.8f  mean abs %.6f  max abs %.6f  (tolerance: cosine >= %.4f, "
                  "max abs <= %.2f)  %s\n",
                  c.dtype.c_str(), c.diff.cosine, c.diff.mean_abs, c.diff.max_abs, c.min_cosine,
                  c.max_abs_limit, c.pass ? "PASS" : "FAIL");
    r.text += buf;
    if (c.diff.nonfinite_other > 0 || c.diff.nonfinite_reference > 0) {
      std::snprintf(buf, sizeof(buf), "        %lld non-finite values (NaN or Inf) in the %s output, %lld in the FP32 reference\n",
                    static_cast<long long>(c.diff.nonfinite_other), c.dtype.c_str(),
                    static_cast<long long>(c.diff.nonfinite_reference));
      r.text += buf;
    }
    r.json[c.dtype] = {{"cosine", c.diff.cosine},
                       {"mean_abs", c.diff.mean_abs},
                       {"max_abs", c.diff.max_abs},
                       {"nonfinite", c.diff.nonfinite_other},
                       {"nonfinite_reference", c.diff.nonfinite_reference},
                       {"tolerance", {{"min_cosine", c.min_cosine}, {"max_abs", c.max_abs_limit}}},
                       {"pass", c.pass}};
  }
  r.json["pass"] = r.pass;
  return r;
}

}  // namespace tierscope
