// `tierscope serve`: flags to engine, tokenizer, batcher and server.
#include "lab/serve_command.h"

#include <malloc.h>

#include <cmath>
#include <iostream>

#include "core/paths.h"
#include "lab/bench.h"
#include "lab/sweep.h"
#include "serve/api.h"
#include "text/wordpiece.h"
#include "tierscope/engine.h"

namespace tierscope {

Status RunServeCommand(ServeCommandOptions o) {
  TS_ASSIGN_OR_RETURN(DType dtype, ParseFloatDType(o.dtype));
  if (o.threads < 0) return InvalidArgument("--threads must be >= 0");
  if (!(o.max_queue_delay_ms >= 0) || !std::isfinite(o.max_queue_delay_ms)) {
    return InvalidArgument("--max-queue-delay-ms must be >= 0");
  }
  TS_ASSIGN_OR_RETURN(o.batcher.bucket_edges, ParseSizeList(o.buckets, "--buckets"));
  o.batcher.max_queue_delay_us = static_cast<int64_t>(std::llround(o.max_queue_delay_ms * 1000));
  TS_RETURN_IF_ERROR(Batcher::Create(o.batcher).status());

  TS_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(o.model_dir));
  if (o.pooling == "cls" || o.pooling == "mean") {
    o.server.pooling = o.pooling == "mean" ? Pooling::kMean : Pooling::kCls;
    o.server.pooling_source = "--pooling";
  } else if (o.pooling == "auto") {
    TS_ASSIGN_OR_RETURN(std::optional<Pooling> p, PoolingFromModelDir(dir));
    o.server.pooling = p.value_or(Pooling::kCls);
    o.server.pooling_source = p ? dir + "/1_Pooling/config.json" : "default (CLS)";
  } else {
    return InvalidArgument("--pooling must be auto, cls or mean, got '" + o.pooling + "'");
  }
  if (o.server.model_name.empty()) {
    std::string base = dir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    base = base.substr(base.find_last_of('/') + 1);
    o.server.model_name = base.empty() ? "bert" : base;
  }
  if (o.server.max_input_length == 0) o.server.max_input_length = MaxSeqLengthFromModelDir(dir);
  // The dispatcher thread's malloc arena would otherwise give freed output buffers back
  // to the kernel after every batch and fault them in again on the next (measured: 10x
  // the page faults and a third less throughput).
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  EngineOptions eo;
  eo.dtype = dtype;
  eo.threads = o.threads;
  eo.device = o.device;
  TS_ASSIGN_OR_RETURN(auto engine, BertEngine::Load(dir, eo));
  std::optional<WordPieceTokenizer> tokenizer;
  if (IsRegularFile(dir + "/vocab.txt")) {
    TS_ASSIGN_OR_RETURN(WordPieceTokenizer t,
                        WordPieceTokenizer::Load(dir + "/vocab.txt", LowerCaseFromModelDir(dir)));
    tokenizer.emplace(std::move(t));
  } else {
    std::cerr << "tierscope serve: " << dir << " has no vocab.txt; /embed is off (use /v2 infer "
              << "with token ids)\n";
  }
  std::cerr << "tierscope serve: model " << o.server.model_name << " (" << dir << "), "
            << DTypeName(dtype) << ", " << engine->threads() << " threads, pooling "
            << PoolingName(o.server.pooling) << "\n";
  return RunServer(*engine, tokenizer ? &*tokenizer : nullptr, o.batcher, o.server);
}

}  // namespace tierscope
