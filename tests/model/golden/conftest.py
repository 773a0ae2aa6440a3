"""Fixtures for the Hugging Face oracle suite.

Every checkpoint is produced by the real tools (transformers' save_pretrained,
torch.save, safetensors.torch.save_file) in a session temp dir, once per session.
Reference outputs come from transformers' BertModel in eval mode, float32, eager
attention, output_hidden_states=True.

Nothing here may touch the network: the offline switches are forced before
transformers is imported.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import pytest

try:  # the test module skips itself when these are missing; keep conftest importable
    import torch
    from hf_oracle import (BASE_CONFIG, CUSTOM_CONFIG, EPS_CONFIG, BertForPreTraining, BertModel,
                           Checkpoint, build_model, save_torch_bin, to_reference)
except ImportError:  # pragma: no cover - exercised only on machines without torch
    torch = None

THREADS = 2
RUN_TIMEOUT_S = 300






# --------------------------------------------------------------------------- binary


class TierscopeRunner:
    """Runs `tierscope run` on a JSON input and loads the .npz it writes."""

    def __init__(self, binary: Path, workdir: Path):
        self.binary = binary
        self.workdir = workdir
        self._n = 0

    def _env(self, extra=None):
        env = dict(os.environ)
        env["HF_HUB_OFFLINE"] = "1"
        env["TRANSFORMERS_OFFLINE"] = "1"
        env.update(extra or {})
        return env

    def invoke(self, model_dir, inputs: dict, *, dtype="fp32", pooler=False, hidden_states=True,
               threads=THREADS, extra_args=(), env=None):
        """Runs the binary; returns (CompletedProcess, output path). Never raises on rc."""
        self._n += 1
        in_path = self.workdir / f"in{self._n}.json"
        out_path = self.workdir / f"out{self._n}.npz"
        payload = {k: np.asarray(v).tolist() if not isinstance(v, list) else v
                   for k, v in inputs.items() if v is not None}
        in_path.write_text(json.dumps(payload))
        cmd = [str(self.binary), "run", "--model", str(model_dir), "--inputs", str(in_path),
               "--output", str(out_path), "--dtype", dtype, "--threads", str(threads)]
        if pooler:
            cmd.append("--pooler")
        if hidden_states:
            cmd.append("--hidden-states")
        cmd.extend(extra_args)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                              env=self._env(env), cwd=self.workdir)
        proc.cmd_line = " ".join(cmd)
        return proc, out_path

    def run(self, model_dir, inputs: dict, **kw) -> dict:
        """Runs the binary, asserts success, returns the npz arrays (checked to be float32)."""
        proc, out_path = self.invoke(model_dir, inputs, **kw)
        assert proc.returncode == 0, (
            f"tierscope exited {proc.returncode}\n  cmd: {proc.cmd_line}\n"
            f"  stderr: {proc.stderr.strip()}\n  stdout: {proc.stdout.strip()[:2000]}")
        assert out_path.is_file(), f"tierscope exited 0 but wrote no {out_path}"
        with np.load(out_path) as z:
            arrays = {k: z[k] for k in z.files}
        for name, arr in arrays.items():
            assert arr.dtype == np.float32, f"{name} has dtype {arr.dtype}, expected float32"
        return arrays



@pytest.fixture(scope="session")
def tierscope(tierscope_bin, tmp_path_factory) -> TierscopeRunner:
    return TierscopeRunner(tierscope_bin, tmp_path_factory.mktemp("tierscope_io"))


# --------------------------------------------------------------------------- models


@pytest.fixture(scope="session")
def base_model():
    return build_model(BertModel, BASE_CONFIG, seed=1234)


@pytest.fixture(scope="session")
def base_st_ckpt(base_model, tmp_path_factory) -> Checkpoint:
    d = tmp_path_factory.mktemp("base_safetensors")
    base_model.save_pretrained(d)
    assert (d / "model.safetensors").is_file() and not (d / "pytorch_model.bin").exists()
    return Checkpoint(d, base_model, base_model.config)


@pytest.fixture(scope="session")
def base_bin_ckpt(base_model, tmp_path_factory) -> Checkpoint:
    d = tmp_path_factory.mktemp("base_torchbin")
    # save_pretrained for config.json, then replace the weights file by pytorch_model.bin
    # (in transformers 5, save_pretrained(d, safe_serialization=False) still writes safetensors).
    base_model.save_pretrained(d)
    (d / "model.safetensors").unlink(missing_ok=True)
    save_torch_bin(base_model.state_dict(), d)
    assert sorted(p.name for p in d.iterdir()) == ["config.json", "pytorch_model.bin"]
    return Checkpoint(d, base_model, base_model.config)


@pytest.fixture(scope="session")
def pretraining_model():
    return build_model(BertForPreTraining, BASE_CONFIG, seed=99)


@pytest.fixture(scope="session", params=["safetensors", "pytorch_model.bin"])
def pretraining_ckpt(request, pretraining_model, tmp_path_factory) -> Checkpoint:
    d = tmp_path_factory.mktemp("pretraining")
    pretraining_model.save_pretrained(d)
    if request.param == "pytorch_model.bin":
        (d / "model.safetensors").unlink()
        # Full state dict: cls.predictions.decoder.weight shares storage with the word
        # embeddings, exactly as torch.save wrote it for tied models.
        save_torch_bin(pretraining_model.state_dict(), d)
    keys = checkpoint_keys(d)
    assert any(k.startswith("bert.encoder.") for k in keys)
    assert any(k.startswith("cls.") for k in keys)
    return Checkpoint(d, pretraining_model.bert, pretraining_model.config)


def checkpoint_keys(d: Path):
    if (d / "model.safetensors").exists():
        from safetensors import safe_open
        with safe_open(str(d / "model.safetensors"), "pt") as f:
            return list(f.keys())
    return list(torch.load(d / "pytorch_model.bin", map_location="cpu", weights_only=True).keys())


def legacy_rename(state_dict: dict) -> dict:
    out = {}
    for k, v in state_dict.items():
        if k.endswith("LayerNorm.weight"):
            k = k[: -len("weight")] + "gamma"
        elif k.endswith("LayerNorm.bias"):
            k = k[: -len("bias")] + "beta"
        out[k] = v.detach().clone().contiguous()
    return out


@pytest.fixture(scope="session", params=["pytorch_model.bin", "model.safetensors", "bert-prefixed-pytorch_model.bin"])
def legacy_ckpt(request, base_model, pretraining_model, tmp_path_factory) -> Checkpoint:
    """LayerNorm.gamma / LayerNorm.beta names (TF-converted BERT checkpoints)."""
    from safetensors.torch import save_file

    d = tmp_path_factory.mktemp("legacy")
    if request.param.startswith("bert-prefixed"):
        model, sd = pretraining_model, pretraining_model.state_dict()
        sd = {k: v for k, v in sd.items() if k != "cls.predictions.decoder.weight"}
        oracle = pretraining_model.bert
    else:
        model, sd, oracle = base_model, base_model.state_dict(), base_model
    sd = legacy_rename(sd)
    assert any(k.endswith("LayerNorm.gamma") for k in sd) and not any(k.endswith("LayerNorm.weight") for k in sd)
    model.config.save_pretrained(d)
    if request.param.endswith("pytorch_model.bin"):
        torch.save(sd, d / "pytorch_model.bin")
    else:
        save_file(sd, str(d / "model.safetensors"), metadata={"format": "pt"})
    return Checkpoint(d, oracle, model.config)


@pytest.fixture(scope="session", params=["float16", "bfloat16"])
def half_stored_ckpt(request, base_model, tmp_path_factory) -> Checkpoint:
    """Weights stored in half precision (model.half().save_pretrained); the oracle is the FP32
    model made from the same rounded weights."""
    dt = getattr(torch, request.param)
    half = copy.deepcopy(base_model).to(dt)
    d = tmp_path_factory.mktemp(f"stored_{request.param}")
    half.save_pretrained(d)
    from safetensors import safe_open
    with safe_open(str(d / "model.safetensors"), "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"F16" if dt == torch.float16 else "BF16"}
    oracle = to_reference(copy.deepcopy(half))
    return Checkpoint(d, oracle, oracle.config)


@pytest.fixture(scope="session")
def custom_ckpt(tmp_path_factory) -> Checkpoint:
    model = build_model(BertModel, CUSTOM_CONFIG, seed=7)
    d = tmp_path_factory.mktemp("custom_config")
    model.save_pretrained(d)
    return Checkpoint(d, model, model.config)


@pytest.fixture(scope="session")
def eps_ckpt(tmp_path_factory) -> Checkpoint:
    model = build_model(BertModel, EPS_CONFIG, seed=21)
    d = tmp_path_factory.mktemp("large_eps")
    model.save_pretrained(d)
    return Checkpoint(d, model, model.config)


@pytest.fixture(scope="session")
def minilm_ckpt(minilm_dir) -> Checkpoint:
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(minilm_dir), local_files_only=True, dtype=torch.float32)
    model = to_reference(model)
    assert type(model).__name__ == "BertModel" and model.config.num_hidden_layers == 6
    return Checkpoint(minilm_dir, model, model.config)


@pytest.fixture(scope="session")
def minilm_tokenizer(minilm_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_dir), local_files_only=True)
