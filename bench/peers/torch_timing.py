"""PyTorch eager timed in a fresh process, for bench/peers: its torch peer rows (batch and
serial FP32, batch BF16, each attention implementation) and the reference of the agreement
row (the eager call `tierscope bench --engine torch` makes, in a fresh process as that
worker is one). A call timed inside the long-running bench/peers process read from 2%
faster to 11% slower (5% slower on average) than the same call in a fresh one (the tiny
model, four alternated runs): a handicap no peer should carry. transformers' AutoModel (--attn default: transformers' choice), an
all-ones mask, --warmup calls (3), then the best of --rounds means of --iterations calls (serial:
a loop of batch-1 calls per iteration). Prints one JSON line: {"samples_per_s", "attn"}.
Usage: python torch_timing.py --model DIR --ids IDS.npy --threads N --iterations N
       [--dtype float32|bfloat16] [--attn default|sdpa|eager] [--serial] [--rounds N] [--warmup N]
"""
import argparse
import json
import time

import numpy as np
import torch
from transformers import AutoModel


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", required=True, help="[batch, seq] int64 input ids (.npy)")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    ap.add_argument("--attn", choices=("default", "sdpa", "eager"), default="default")
    ap.add_argument("--serial", action="store_true", help="batch-1 calls, one per sample")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    kw = {} if a.attn == "default" else {"attn_implementation": a.attn}
    if a.dtype != "float32":  # FP32 loads as `tierscope bench --engine torch` loads it: no dtype
        kw["dtype"] = getattr(torch, a.dtype)  # (given float32, the same calls ran 5-10% slower)
    model = AutoModel.from_pretrained(a.model, local_files_only=True, **kw).eval()
    ids = torch.from_numpy(np.load(a.ids)).to(torch.int64)
    mask = torch.ones_like(ids)
    if a.serial:
        one, ones = [ids[i:i + 1] for i in range(ids.shape[0])], torch.ones_like(ids[:1])

        def call():
            return [model(input_ids=x, attention_mask=ones) for x in one]
    else:
        def call():
            return model(input_ids=ids, attention_mask=mask)
    best = float("inf")
    with torch.inference_mode():
        for _ in range(a.warmup):
            call()
        for _ in range(max(1, a.rounds)):
            t = time.perf_counter()
            for _ in range(a.iterations):
                call()
            best = min(best, (time.perf_counter() - t) / a.iterations)
    print(json.dumps({"samples_per_s": ids.shape[0] / best, "attn": model.config._attn_implementation}))


if __name__ == "__main__":
    main()
