"""PyTorch eager peer for `tierscope bench`: the study's bert_infer.py loop on the CPU.

Runs transformers' BertModel with the built-in model's configuration (or --model DIR)
on input_ids uniform in [100, vocab), batch and serial (a loop of batch-1 forwards),
with each attention implementation asked for (--attn: transformers' default, SDPA for
BERT, and the study's eager, by default both), and prints samples/s with the
implementation each figure came from. Usage (from the repo root, in the test venv):
  HF_HUB_OFFLINE=1 ~/.cache/tierscope/venv/bin/python bench/peers/torch_eager.py --threads 2
"""
import argparse
import time

import torch
from transformers import BertConfig, BertModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", help="HF model dir (default: random weights, L-2/H-128/A-2 config)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--attn", default="default,eager",
                    help="attention implementations, comma-separated: default (transformers' choice), sdpa, eager")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for attn in a.attn.split(","):
        kw = {} if attn == "default" else {"attn_implementation": attn}
        if a.model:
            model = BertModel.from_pretrained(a.model, **kw)
        else:
            torch.manual_seed(2026)  # the same random weights for every implementation
            model = BertModel(BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=512, **kw))
        model.eval()
        impl = model.config._attn_implementation + (" (transformers' default)" if attn == "default" else "")
        vocab = model.config.vocab_size
        ids = torch.randint(100, vocab, (a.batch_size, a.seq_len), generator=torch.Generator().manual_seed(2026))
        with torch.inference_mode():
            for name, unit in (("batch-fp32", lambda: model(input_ids=ids)),
                               ("serial-fp32", lambda: [model(input_ids=ids[i:i + 1]) for i in range(a.batch_size)])):
                for _ in range(3):
                    unit()
                t = time.perf_counter()
                for _ in range(a.iterations):
                    unit()
                dt = time.perf_counter() - t
                print(f"torch {torch.__version__} {name} attn={impl}: {a.batch_size * a.iterations / dt:.1f} samples/s")

if __name__ == "__main__":
    main()
