"""The reference of bench/peers' agreement row: the eager call `tierscope bench --engine
torch` makes (transformers' AutoModel with its default attention, an all-ones mask), timed
alike — warm-up 3, then the mean of --iterations calls — in a fresh process, as tierscope's
own worker is one (the same call timed inside the long-running bench/peers process read
6-16% slower than in a fresh one). Prints one JSON line: {"samples_per_s", "attn"}.
Usage: python eager_alike.py --model DIR --ids IDS.npy --threads N --iterations N
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
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = AutoModel.from_pretrained(a.model, local_files_only=True).eval()
    ids = torch.from_numpy(np.load(a.ids)).to(torch.int64)
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        for _ in range(3):
            model(input_ids=ids, attention_mask=mask)
        t = time.perf_counter()
        for _ in range(a.iterations):
            model(input_ids=ids, attention_mask=mask)
        dt = time.perf_counter() - t
    print(json.dumps({"samples_per_s": ids.shape[0] * a.iterations / dt,
                      "attn": model.config._attn_implementation}))


if __name__ == "__main__":
    main()
