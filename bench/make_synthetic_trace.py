"""Writes a synthetic Kineto trace of about SIZE_MB megabytes (default 1024) for the
ingest benchmark: ProfilerStep annotations, cpu_op / cudaLaunchKernel / kernel triples
with correlations, ac2g flows and [memory] events, in current Kineto's shape.
Usage: python3 bench/make_synthetic_trace.py OUT.json [SIZE_MB]"""
import sys

out, size_mb = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 1024.0
target = int(size_mb * 1024 * 1024)
names = ["aten::linear", "aten::addmm", "aten::layer_norm", "aten::gelu", "aten::add"]
kernels = ["ampere_sgemm_128x64_tn", "void at::native::vectorized_elementwise_kernel<4>",
           "void at::native::(anonymous namespace)::layer_norm_kernel<float>"]
with open(out, "w") as f:
    f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "Synthetic GPU", "numSms": 108}],\n'
            '  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n  "traceEvents": [\n')
    written, i, ts, step = 0, 0, 1_700_000_000_000.0, 0
    first = True
    while written < target:
        if i % 1000 == 0:
            line = ('  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 1, "tid": 1, '
                    '"ts": %.3f, "dur": 5000.0, "args": {"External id": %d}}' % (step, ts, 10_000_000 + step))
            step += 1
            lines = [line]
        else:
            lines = []
        ext, corr = i + 1, i + 1
        n, k = names[i % len(names)], kernels[i % len(kernels)]
        lines.append('  {"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 1, "tid": 1, "ts": %.3f, "dur": 12.5, '
                     '"args": {"External id": %d, "Input Dims": [[64, 128, 128], [384, 128]], '
                     '"Input type": ["float", "float"]}}' % (n, ts, ext))
        lines.append('  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, '
                     '"ts": %.3f, "dur": 4.25, "args": {"External id": %d, "cbid": 211, "correlation": %d}}'
                     % (ts + 2, ext, corr))
        lines.append('  {"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "ts": %.3f, "dur": 3.5, '
                     '"args": {"External id": %d, "queued": 0, "device": 0, "context": 1, "stream": 7, '
                     '"correlation": %d, "registers per thread": 32, "shared memory": 0, '
                     '"grid": [256, 1, 1], "block": [128, 1, 1]}}' % (k, ts + 8, ext, corr))
        lines.append('  {"ph": "s", "id": %d, "pid": 1, "tid": 1, "ts": %.3f, "cat": "ac2g", "name": "ac2g"}'
                     % (corr, ts + 2))
        lines.append('  {"ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %.3f, "cat": "ac2g", "name": "ac2g", "bp": "e"}'
                     % (corr, ts + 8))
        if i % 4 == 0:
            lines.append('  {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, '
                         '"tid": 1, "ts": %.3f, "args": {"Device Type": 1, "Device Id": 0, "Addr": %d, '
                         '"Bytes": 4096, "Total Allocated": %d, "Total Reserved": 8388608}}' % (ts + 1, 1 << 32 | i, 4096 * (i % 1000)))
        chunk = ",\n".join(lines)
        if not first:
            chunk = ",\n" + chunk
        first = False
        f.write(chunk)
        written += len(chunk)
        i += 1
        ts += 20.0
    f.write("\n  ]\n}\n")
