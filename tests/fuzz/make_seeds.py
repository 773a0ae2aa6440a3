"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/): small valid and
nearly valid inputs of each format, from which libFuzzer mutates. Run it again (with the
test venv's python: torch is needed for the checkpoint seeds) when a format grows:

    ~/.cache/tierscope/venv/bin/python tests/fuzz/make_seeds.py

Crash inputs found later are added to the same folders by hand, as regression seeds."""
from __future__ import annotations

import io
import json
import sqlite3
import struct
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"


def put(target: str, name: str, data: bytes | str) -> None:
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data.encode() if isinstance(data, str) else data)


def safetensors(tensors: dict, pad_to: int = 8, metadata: dict | None = None) -> bytes:
    header, offset, blobs = {}, 0, []
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    if pad_to:
        h += b" " * ((-(8 + len(h))) % pad_to)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def safetensors_seeds() -> None:
    f32 = struct.pack("<6f", 1, -2, 3.5, 0, 1e-3, -7)
    f16 = struct.pack("<4H", 0x3C00, 0xC000, 0x7C00, 0x0001)
    put("safetensors_fuzzer", "two_tensors", safetensors({"w": ("F32", [2, 3], f32), "h": ("F16", [4], f16)},
                                                          metadata={"format": "pt"}))
    put("safetensors_fuzzer", "misaligned", safetensors({"w": ("F32", [6], f32)}, pad_to=0))
    put("safetensors_fuzzer", "bf16_ints_empty", safetensors({
        "b": ("BF16", [2], struct.pack("<2H", 0x3F80, 0xBF80)),
        "i": ("I64", [1, 1], struct.pack("<q", 30522)),
        "e": ("F32", [0, 4], b""),
        "position_ids": ("I64", [3], struct.pack("<3q", 0, 1, 2))}))


def torch_seeds() -> None:
    import torch
    a = torch.arange(6.0).reshape(2, 3)
    sd = {"embeddings.word_embeddings.weight": a, "tied": a,  # one storage, two keys
          "view": a[1], "transposed": a.t(), "ids": torch.tensor([1, 2], dtype=torch.int64),
          "half": torch.ones(3, dtype=torch.float16), "bf16": torch.zeros(2, dtype=torch.bfloat16)}
    buf = io.BytesIO()
    torch.save(sd, buf)
    raw = buf.getvalue()
    put("torch_bin_fuzzer", "state_dict", raw)
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2, 2)}, buf)
    put("torch_bin_fuzzer", "one_tensor", buf.getvalue())
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        pkl = [n for n in z.namelist() if n.endswith("data.pkl")][0]
        put("pickle_fuzzer", "state_dict.pkl", z.read(pkl))
    import pickle
    put("pickle_fuzzer", "plain_dict.pkl", pickle.dumps({"a": [1, 2.5, "x", None, True], "b": (1, 2)}, protocol=2))


def kineto_seeds() -> None:
    base = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
            "totalGlobalMem": 85031714816, "numSms": 132, "computeMajor": 9, "computeMinor": 0}],
            "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
            "baseTimeNanoseconds": 1735632360000000000}
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 10, "tid": 10, "ts": 100.0, "dur": 900.5},
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 10, "tid": 10, "ts": 110, "dur": 50,
         "args": {"External id": 7, "Input Dims": [[8944, 1024], [2816, 1024], [2816]],
                  "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 120, "dur": 6,
         "args": {"correlation": 42, "External id": 7, "cbid": 211}},
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
         "pid": 0, "tid": 7, "ts": 130, "dur": 412.25,
         "args": {"correlation": 42, "External id": 7, "stream": 7, "grid": [30, 4, 1], "block": [384, 1, 1],
                  "registers per thread": 168, "shared memory": 232448, "device": 0}},
        {"ph": "s", "id": 42, "pid": 10, "tid": 10, "ts": 120, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 42, "pid": 0, "tid": 7, "ts": 130, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
         "ts": 600, "dur": 20, "args": {"bytes": 1048576, "memory bandwidth (GB/s)": 52.4, "correlation": 43}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 20,
         "ts": 650, "dur": 300, "args": {"correlation": 44, "stream": 20, "grid": [2, 1, 1], "block": [640, 1, 1]}},
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 10, "tid": 10, "ts": 115, "s": "t",
         "args": {"Device Type": 1, "Device Id": 0, "Addr": 140000, "Bytes": 4096, "Total Allocated": 8192}},
        {"ph": "M", "name": "thread_name", "pid": 10, "tid": 10, "args": {"name": "thread 10 (python)"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "stream 7"}},
    ]
    put("kineto_fuzzer", "h100_step.json", json.dumps({**base, "traceEvents": ev}))
    rocm = [{"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_HHS_BH_MT128x128x32", "pid": 2, "tid": 1,
             "ts": 4203669604595.407, "dur": 340.024, "args": {"correlation": 5, "stream": 1}},
            {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1,
             "ts": 4203669604590.1, "dur": 3.5, "args": {"correlation": 5}}]
    put("kineto_fuzzer", "rocm_floats.json", json.dumps({"traceEvents": rocm, "deviceProperties": []}))
    put("kineto_fuzzer", "bare_array.json", json.dumps(ev[:4]))
    # The roofline's models and kernel names, and the quality checks' defects: attention
    # backward and convolution backward with their Concrete Inputs, a grouped GEMM, a graph
    # replay of vendor GEMM kernels, a duplicated kernel, a swapped pair and an open B range.
    attn = ["c10::BFloat16"] * 5
    roof = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_flash_attention_backward", "pid": 10,
         "tid": 10, "ts": 10, "dur": 40, "args": {"External id": 1, "Input Dims": [[1, 8, 64, 64]] * 5 + [[1, 8, 64]] +
                                                 [[]] * 9, "Input type": attn + ["float"] + [""] * 9,
                                                 "Concrete Inputs": [""] * 8 + ["64", "64", "0.", "True", "", "", ""]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::convolution_backward", "pid": 10, "tid": 10, "ts": 60, "dur": 30,
         "args": {"External id": 2, "Input Dims": [[2, 4, 6, 6], [2, 3, 8, 8], [4, 3, 3, 3]] + [[]] * 8,
                  "Input type": ["float"] * 3 + [""] * 8,
                  "Concrete Inputs": ["", "", "", "[4]", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1",
                                      "[True, True, False]"]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::_grouped_mm", "pid": 10, "tid": 10, "ts": 100, "dur": 30,
         "args": {"External id": 3, "Input Dims": [[96, 64], [8, 64, 128], [8]],
                  "Input type": ["c10::BFloat16", "c10::BFloat16", "int"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 10, "tid": 10, "ts": 140, "dur": 5,
         "args": {"correlation": 9}},
        {"ph": "B", "name": "open range", "pid": 10, "tid": 10, "ts": 150},
    ]
    kernel_names = ["sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_cublas",
                    "cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_void_f16_128x128x64_1x1x1_0_tnn_align16",
                    "Cijk_Alik_Bljk_BBS_BH_MT32x32x256_MI16x16x1", "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1",
                    "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_dynBatch_sm100f", "igemm_wrw_gtcx2_nhwc_bf16_bt256x128x16",
                    "musa_asm_hhhhssgemm_nt_tce_128_32x128B128_epilogue", "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT"]
    for i, name in enumerate(kernel_names):
        ext, corr = (i % 3) + 1, (100 + i if i < 3 else 9)
        roof.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 200 + 20 * i, "dur": 15,
                     "args": {"correlation": corr, "External id": ext if i < 3 else 0, "stream": 7}})
        if i < 3:
            roof.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
                         "ts": 12 + 40 * i, "dur": 3, "args": {"correlation": corr, "External id": ext}})
    roof.append(dict(roof[-1]))  # recorded twice
    roof[-2]["ts"], roof[-3]["ts"] = roof[-3]["ts"], roof[-2]["ts"]
    put("kineto_fuzzer", "roofline_quality.json", json.dumps({**base, "traceEvents": roof}))
    put("kineto_fuzzer", "escapes.json", '{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a\\"b\\u00e9\\n",'
                                        '"pid":1,"tid":1,"ts":1e3,"dur":-5}]}')

    put("kineto_fuzzer", "rocprofv3.json", json.dumps(rocprof_doc()))


def rocprof_doc() -> dict:
    """A small rocprofv3 JSON result: a GPU and a CPU agent, a kernel, a HIP call, a copy,
    a roctx range with its message, and records with an unknown kernel and no times."""
    kinds = [{"kind": "NONE", "operations": []}] + [{"kind": f"K{i}", "operations": []} for i in range(1, 33)]
    kinds[5] = {"kind": "HIP_RUNTIME_API", "operations": ["hipNone", "hipLaunchKernel"]}
    kinds[7] = {"kind": "MARKER_CORE_API", "operations": ["roctxNone", "roctxRangePushA"]}
    kinds[10] = {"kind": "MEMORY_COPY", "operations": ["NONE", "MEMORY_COPY_HOST_TO_DEVICE"]}
    kinds[11] = {"kind": "KERNEL_DISPATCH", "operations": ["NONE", "ENQUEUE", "COMPLETE"]}
    corr = lambda i: {"internal": i, "external": 0}  # noqa: E731
    return {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 77},
        "agents": [{"id": {"handle": 1}, "type": 1, "name": "cpu", "cu_count": 8},
                   {"id": {"handle": 2}, "type": 2, "name": "gfx942", "product_name": "AMD Instinct MI300X",
                    "cu_count": 304}],
        "strings": {"buffer_records": kinds, "marker_api": [{"key": 9, "value": "train_step"}]},
        "kernel_symbols": [{"kernel_id": 3, "formatted_kernel_name": "Cijk_Ailk_Bljk_BBS_BH_MT64x64x32"}],
        "buffer_records": {
            "kernel_dispatch": [
                {"kind": 11, "operation": 2, "thread_id": 77, "correlation_id": corr(5),
                 "start_timestamp": 2000, "end_timestamp": 5000,
                 "dispatch_info": {"agent_id": {"handle": 2}, "queue_id": {"handle": 4}, "kernel_id": 3,
                                   "workgroup_size": {"x": 256, "y": 1, "z": 1},
                                   "grid_size": {"x": 65536, "y": 2, "z": 1}},
                 "stream_id": {"handle": 9}},
                {"kind": 11, "operation": 2, "correlation_id": corr(6), "start_timestamp": 6000,
                 "end_timestamp": 7000, "dispatch_info": {"agent_id": {"handle": 2}, "kernel_id": 99}},
                {"kind": 11, "operation": 2, "correlation_id": corr(7),
                 "dispatch_info": {"agent_id": {"handle": 2}, "kernel_id": 3}}],
            "hip_api": [{"kind": 5, "operation": 1, "thread_id": 77, "correlation_id": corr(5),
                         "start_timestamp": 1000, "end_timestamp": 1500}],
            "memory_copy": [{"kind": 10, "operation": 1, "thread_id": 77, "correlation_id": corr(8),
                             "start_timestamp": 500, "end_timestamp": 900, "dst_agent_id": {"handle": 2},
                             "src_agent_id": {"handle": 1}, "bytes": 4096}],
            "marker_api": [{"kind": 7, "operation": 1, "thread_id": 77, "correlation_id": corr(9),
                            "start_timestamp": 400, "end_timestamp": 8000}],
            "scratch_memory": []}}]}


def nsys_seeds() -> None:
    import re
    schema = (HERE.parent / "trace" / "nsys_schema.h").read_text()
    sql = re.search(r'R"sql\((.*)\)sql"', schema, re.S).group(1)
    path = CORPUS / "nsys_fuzzer" / "export.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript(sql)
    tid = (1 << 56) | (4242 << 24) | 4243
    db.executescript(f"""
      INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'void gemm<float>(float*)'), (3, 'gemm'),
        (4, 'cudaMemcpyAsync_v3020'), (5, 'step 1');
      INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H100', '0000:01:00.0', 85899345920, 132, 9, 0);
      INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000, 1010, 1, {tid}, 11, 1, 0, NULL),
        (1100, 1150, 1, {tid}, 12, 4, 0, NULL);
      INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1020, 2020, 0, 1, NULL, 7, 11, {tid >> 24 << 24}, 2, 3,
        NULL, 0, 0, 64, 120, 1, 1, 128, 1, 1, 0, 49152, 0, 0, 1);
      INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (2100, 2200, 0, 1, 7, 12, {tid >> 24 << 24}, 4096, 1, 0, 1);
      INSERT INTO NVTX_EVENTS VALUES (900, 3000, 59, NULL, NULL, NULL, 'step 1', {tid}, NULL, NULL, NULL);
    """)
    db.commit()
    db.close()
    put("nsys_fuzzer", "rows", bytes(range(256)) * 2)


def ncu_seeds() -> None:
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
            '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')
    rows = []
    for kid, name, grid in ((0, "gemm_kernel", "(120, 1, 1)"), (1, "void at::native::add<float>(int)", "(16384, 1, 1)")):
        for sec, metric, unit, value in (("GPU Speed Of Light Throughput", "Duration", "usecond", "14.05"),
                                         ("GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", "12.84"),
                                         ("GPU Speed Of Light Throughput", "Memory Throughput", "%", "91.27"),
                                         ("Launch Statistics", "Grid Size", "", "16,384"),
                                         ("Launch Statistics", "Registers Per Thread", "register/thread", "16"),
                                         ("Occupancy", "Achieved Occupancy", "%", "n/a")):
            rows.append(f'"{kid}","31337","python3","node","{name}","1","7","(128, 1, 1)","{grid}","0","9.0",'
                        f'"{sec}","{metric}","{unit}","{value}"\n')
    put("ncu_csv_fuzzer", "details.csv", "==PROF== Connected to process 31337\n" + head + "".join(rows))
    put("ncu_csv_fuzzer", "quoted.csv", head + '"0","1","p","h","k ""q"", r","1","7","(1, 1, 1)","(1, 1, 1)",'
                                              '"0","8.0","SOL","Duration","msecond","1.5e-3"\n')


def rocpd_seeds() -> None:
    import re
    schema = (HERE.parent / "trace" / "rocpd_schema.h").read_text()
    sql = re.search(r'R"\((.*)\)"', schema, re.S).group(1)
    path = CORPUS / "rocpd_fuzzer" / "results.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript(sql)
    db.executescript("""
      INSERT INTO rocpd_string_0192 (id, string) VALUES (1, 'hipLaunchKernel'), (2, 'HIP_RUNTIME_API_EXT'),
        (3, 'MARKER_CORE_API'), (4, 'MEMORY_COPY_HOST_TO_DEVICE');
      INSERT INTO rocpd_info_agent_0192 (id, type, type_index, name, product_name, extdata) VALUES
        (2, 'GPU', 0, 'gfx942', 'AMD Instinct MI300X', '{"cu_count": 304}');
      INSERT INTO rocpd_info_kernel_symbol_0192 (id, kernel_name, display_name) VALUES (10, '_Z4gemmv', 'gemm()');
      INSERT INTO rocpd_event_0192 (id, category_id, stack_id, extdata) VALUES (1, 2, 7, '{}'), (2, 2, 7, '{}'),
        (3, 3, 8, '{"message": "step"}');
      INSERT INTO rocpd_region_0192 (pid, tid, start, end, name_id, event_id) VALUES (42, 43, 100, 150, 1, 1),
        (42, 43, 50, 900, 1, 3);
      INSERT INTO rocpd_kernel_dispatch_0192 (agent_id, kernel_id, queue_id, stream_id, start, end,
        workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id)
        VALUES (2, 10, 1, 5, 300, 700, 256, 1, 1, 1024, 1, 1, 2);
      INSERT INTO rocpd_memory_copy_0192 (start, end, name_id, dst_agent_id, src_agent_id, size, stream_id)
        VALUES (160, 260, 4, 2, 0, 4096, 5);
    """)
    db.commit()
    db.close()
    put("rocpd_fuzzer", "rows", bytes(range(256)) * 2)


def ascend_seeds() -> None:
    """torch_npu's trace_view.json shape: a bare list, string times, device work known by its
    process (named last), flows joining an operator to its task, a collective and its tasks."""
    hw, cann, hccl = 3170820512, 3170820320, 3170820576
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": "100.000", "dur": 50},
        {"ph": "s", "cat": "async_npu", "name": "torch_to_npu", "id": 777, "pid": 1, "tid": 1, "ts": "112.000"},
        {"ph": "X", "name": "Node@launch", "pid": cann, "tid": 2, "ts": "130.000", "dur": 5, "args": {"connection_id": 42}},
        {"ph": "X", "name": "MatMulV2", "pid": hw, "tid": 2, "ts": "140.000", "dur": 20,
         "args": {"Task Type": "AI_CORE", "connection_id": 42}},
        {"ph": "f", "cat": "async_npu", "name": "torch_to_npu", "id": 777, "pid": hw, "tid": 2, "ts": "140.000", "bp": "e"},
        {"ph": "X", "name": "EVENT_WAIT", "pid": hw, "tid": 2, "ts": "161.000", "dur": 1, "args": {"Task Type": "EVENT_WAIT_SQE"}},
        {"ph": "X", "name": "hcom_allReduce__1_0_1", "pid": hccl, "tid": 0, "ts": "200.000", "dur": 30,
         "args": {"connection_id": 43}},
        {"ph": "X", "name": "Notify_Wait", "pid": hccl, "tid": 1, "ts": "201.000", "dur": 5,
         "args": {"task type": "Notify_Wait", "stream id": 4}},
        {"ph": "X", "name": "Notify Wait", "pid": hw, "tid": 4, "ts": "201.000", "dur": 5, "args": {"Task Type": "Notify Wait"}},
        {"ph": "M", "name": "process_name", "pid": hw, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "process_name", "pid": cann, "tid": 0, "args": {"name": "CANN"}},
        {"ph": "M", "name": "process_name", "pid": hccl, "tid": 0, "args": {"name": "HCCL"}},
    ]
    put("kineto_fuzzer", "ascend_trace_view.json", json.dumps(events))


def vendor_csv_seeds() -> None:
    kernels = ('"Kind","Agent_Id","Queue_Id","Stream_Id","Kernel_Name","Correlation_Id","Start_Timestamp",'
               '"End_Timestamp","Workgroup_Size_X","Grid_Size_X"\n'
               '"KERNEL_DISPATCH","Agent 1",1,3,"gemm",5,1000,1500,256,1024\n')
    api = ('"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
           '"HIP_RUNTIME_API_EXT","hipLaunchKernel",42,43,5,900,950\n')
    markers = api.replace("HIP_RUNTIME_API_EXT", "MARKER_CORE_API").replace("hipLaunchKernel", "step")
    copies = ('"Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id","Correlation_Id",'
              '"Start_Timestamp","End_Timestamp"\n"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",3,"Agent 0","Agent 1",6,10,20\n')
    agents = ('"Node_Id","Logical_Node_Id","Agent_Type","Cu_Count","Name","Product_Name"\n'
              '0,0,"CPU",0,"cpu","EPYC"\n2,1,"GPU",304,"gfx942","AMD Instinct MI300X"\n')
    put("vendor_csv_fuzzer", "rocprof", "\x00" + "\f".join([kernels, api, markers, copies, agents]))
    put("vendor_csv_fuzzer", "kernel_details.csv",
        "\x01Step Id,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim,Input Shapes\n"
        '1,2,k,MatMul,AI_CORE,140.000\t,20,24,"""32,64"""\n1,,hcom_allReduce__1_0_1,hcom,HCCL,200.001\t,30,0,N/A\n')


def http_seeds() -> None:
    def req(target: str, body: dict | str, headers: str = "") -> str:
        b = body if isinstance(body, str) else json.dumps(body)
        return (f"POST {target} HTTP/1.1\r\nHost: x\r\n{headers}Content-Type: application/json\r\n"
                f"Content-Length: {len(b.encode())}\r\n\r\n{b}")
    put("http_request_fuzzer", "embed", req("/embed", {"inputs": ["hello world", "the tokens!"], "normalize": True}))
    put("http_request_fuzzer", "embed_truncate", req("/embed?x=1", {"inputs": "hello " * 40, "truncate": True}))
    infer = {"id": "7", "inputs": [
        {"name": "input_ids", "datatype": "INT64", "shape": [2, 3], "data": [[2, 6, 3], [2, 7, 3]]},
        {"name": "attention_mask", "datatype": "INT64", "shape": [2, 3], "data": [1, 1, 1, 1, 1, 0]},
        {"name": "token_type_ids", "datatype": "INT32", "shape": [2, 3], "data": [0, 0, 0, 0, 0, 0]}],
        "outputs": [{"name": "pooler_output"}, {"name": "last_hidden_state"}]}
    put("http_request_fuzzer", "infer", req("/v2/models/bert/infer", infer))
    put("http_request_fuzzer", "infer_body", json.dumps(infer))
    put("http_request_fuzzer", "chunked", "POST /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                          "b\r\n{\"inputs\": \r\n9\r\n\"hello\"}\r\n0\r\n\r\n")
    put("http_request_fuzzer", "get", "GET /v2/models/bert HTTP/1.1\r\nHost: x\r\n\r\n")
    put("http_request_fuzzer", "tokenize", req("/tokenize", {"inputs": ["Hello, the wörld e\u0301!", "a [MASK] 東"],
                                                             "add_special_tokens": False, "truncate": True}))
    put("http_request_fuzzer", "openai", req("/v1/embeddings", {"input": ["hello world", [2, 6, 3]], "model": "bert",
                                                                "encoding_format": "base64"}))
    put("http_request_fuzzer", "openai_no_vocab", req("/v1/embeddings", {"input": [[2, 6, 3]], "model": "bert"},
                                                      "X-Fuzz-No-Vocab: 1\r\n"))
    put("http_request_fuzzer", "tokenize_draining", req("/tokenize", {"inputs": "hello"}, "X-Fuzz-Draining: 1\r\n"))
    put("http_request_fuzzer", "infer_repeated_output", req("/v2/models/bert/infer", {**infer, "outputs": [
        {"name": "last_hidden_state"}, {"name": "last_hidden_state"}]}))


if __name__ == "__main__":
    safetensors_seeds()
    torch_seeds()
    kineto_seeds()
    nsys_seeds()
    ncu_seeds()
    rocpd_seeds()
    ascend_seeds()
    vendor_csv_seeds()
    http_seeds()
    for d in sorted(CORPUS.iterdir()):
        print(d.name, len(list(d.iterdir())), "seeds")
