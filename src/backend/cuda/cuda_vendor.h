// The vendor seam of the CUDA backend: every CUDA runtime and cuBLASLt name the backend
// uses is spelled through these macros, so the same sources build for Moore Threads GPUs
// with -DTIERSCOPE_MUSA (MUSA runtime, muBLASLt, mcc), the way llama.cpp builds its MUSA
// backend from its CUDA one. The mapped surface is kept small on purpose: streams,
// events, memory, graphs, device properties, errors, and cuBLASLt's matmul. The MUSA side cannot
// be built or tested here; the names follow Moore Threads' MUSA SDK, which mirrors CUDA's
// (cudaX -> musaX, cublasLtX -> mublasLtX, CUDA_R_* -> MUSA_R_*).
#ifndef TIERSCOPE_BACKEND_CUDA_CUDA_VENDOR_H_
#define TIERSCOPE_BACKEND_CUDA_CUDA_VENDOR_H_

#if defined(TIERSCOPE_MUSA)
#include <musa_bf16.h>
#include <musa_fp16.h>
#include <musa_runtime.h>
#include <mublasLt.h>
#define TS_GPU_VENDOR "musa"
#define gpuError_t musaError_t
#define gpuSuccess musaSuccess
#define gpuErrorInvalidValue musaErrorInvalidValue
#define gpuGetErrorName musaGetErrorName
#define gpuGetErrorString musaGetErrorString
#define gpuGetLastError musaGetLastError
#define gpuGetDeviceCount musaGetDeviceCount
#define gpuSetDevice musaSetDevice
#define gpuGetDevice musaGetDevice
#define gpuDeviceProp musaDeviceProp
#define gpuGetDeviceProperties musaGetDeviceProperties
#define gpuDeviceGetAttribute musaDeviceGetAttribute
#define gpuDevAttrClockRate musaDevAttrClockRate
#define gpuStream_t musaStream_t
#define gpuStreamCreateWithFlags musaStreamCreateWithFlags
#define gpuStreamNonBlocking musaStreamNonBlocking
#define gpuStreamDestroy musaStreamDestroy
#define gpuStreamSynchronize musaStreamSynchronize
#define gpuEvent_t musaEvent_t
#define gpuEventCreate musaEventCreate
#define gpuEventDestroy musaEventDestroy
#define gpuEventRecord musaEventRecord
#define gpuEventSynchronize musaEventSynchronize
#define gpuEventElapsedTime musaEventElapsedTime
#define gpuMalloc musaMalloc
#define gpuFree musaFree
#define gpuMemGetInfo musaMemGetInfo
#define gpuMemcpyAsync musaMemcpyAsync
#define gpuMemcpyHostToDevice musaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost musaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice musaMemcpyDeviceToDevice
#define gpuMemsetAsync musaMemsetAsync
#define gpuGraph_t musaGraph_t
#define gpuGraphExec_t musaGraphExec_t
#define gpuStreamBeginCapture musaStreamBeginCapture
#define gpuStreamCaptureModeRelaxed musaStreamCaptureModeRelaxed
#define gpuStreamEndCapture musaStreamEndCapture
#define gpuGraphInstantiate musaGraphInstantiate
#define gpuGraphLaunch musaGraphLaunch
#define gpuGraphDestroy musaGraphDestroy
#define gpuGraphExecDestroy musaGraphExecDestroy
#define gpuRuntimeGetVersion musaRuntimeGetVersion
#define gpuDriverGetVersion musaDriverGetVersion
#define gpuHalf __half
#define gpuBf16 __mt_bfloat16
#define blasLtHandle_t mublasLtHandle_t
#define blasLtCreate mublasLtCreate
#define blasLtDestroy mublasLtDestroy
#define blasLtMatmul mublasLtMatmul
#define blasLtMatmulDesc_t mublasLtMatmulDesc_t
#define blasLtMatmulDescCreate mublasLtMatmulDescCreate
#define blasLtMatmulDescDestroy mublasLtMatmulDescDestroy
#define blasLtMatmulDescSetAttribute mublasLtMatmulDescSetAttribute
#define blasLtMatrixLayout_t mublasLtMatrixLayout_t
#define blasLtMatrixLayoutCreate mublasLtMatrixLayoutCreate
#define blasLtMatrixLayoutDestroy mublasLtMatrixLayoutDestroy
#define blasLtMatmulPreference_t mublasLtMatmulPreference_t
#define blasLtMatmulPreferenceCreate mublasLtMatmulPreferenceCreate
#define blasLtMatmulPreferenceDestroy mublasLtMatmulPreferenceDestroy
#define blasLtMatmulPreferenceSetAttribute mublasLtMatmulPreferenceSetAttribute
#define blasLtMatmulHeuristicResult_t mublasLtMatmulHeuristicResult_t
#define blasLtMatmulAlgoGetHeuristic mublasLtMatmulAlgoGetHeuristic
#define blasStatus_t mublasStatus_t
#define BLAS_STATUS_SUCCESS MUBLAS_STATUS_SUCCESS
#define BLAS_OP_N MUBLAS_OP_N
#define BLAS_OP_T MUBLAS_OP_T
#define BLAS_COMPUTE_32F MUBLAS_COMPUTE_32F
#define BLASLT_MATMUL_DESC_TRANSA MUBLASLT_MATMUL_DESC_TRANSA
#define BLASLT_MATMUL_DESC_TRANSB MUBLASLT_MATMUL_DESC_TRANSB
#define BLASLT_MATMUL_DESC_EPILOGUE MUBLASLT_MATMUL_DESC_EPILOGUE
#define BLASLT_MATMUL_DESC_BIAS_POINTER MUBLASLT_MATMUL_DESC_BIAS_POINTER
#define BLASLT_EPILOGUE_DEFAULT MUBLASLT_EPILOGUE_DEFAULT
#define BLASLT_EPILOGUE_BIAS MUBLASLT_EPILOGUE_BIAS
#define BLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES MUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define GPU_R_32F MUSA_R_32F
#define GPU_R_16F MUSA_R_16F
#define GPU_R_16BF MUSA_R_16BF
#else
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define TS_GPU_VENDOR "cuda"
#define gpuError_t cudaError_t
#define gpuSuccess cudaSuccess
#define gpuErrorInvalidValue cudaErrorInvalidValue
#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuDeviceProp cudaDeviceProp
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrClockRate cudaDevAttrClockRate
#define gpuStream_t cudaStream_t
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuEvent_t cudaEvent_t
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemsetAsync cudaMemsetAsync
#define gpuGraph_t cudaGraph_t
#define gpuGraphExec_t cudaGraphExec_t
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuGraphInstantiate cudaGraphInstantiate
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuHalf __half
#define gpuBf16 __nv_bfloat16
#define blasLtHandle_t cublasLtHandle_t
#define blasLtCreate cublasLtCreate
#define blasLtDestroy cublasLtDestroy
#define blasLtMatmul cublasLtMatmul
#define blasLtMatmulDesc_t cublasLtMatmulDesc_t
#define blasLtMatmulDescCreate cublasLtMatmulDescCreate
#define blasLtMatmulDescDestroy cublasLtMatmulDescDestroy
#define blasLtMatmulDescSetAttribute cublasLtMatmulDescSetAttribute
#define blasLtMatrixLayout_t cublasLtMatrixLayout_t
#define blasLtMatrixLayoutCreate cublasLtMatrixLayoutCreate
#define blasLtMatrixLayoutDestroy cublasLtMatrixLayoutDestroy
#define blasLtMatmulPreference_t cublasLtMatmulPreference_t
#define blasLtMatmulPreferenceCreate cublasLtMatmulPreferenceCreate
#define blasLtMatmulPreferenceDestroy cublasLtMatmulPreferenceDestroy
#define blasLtMatmulPreferenceSetAttribute cublasLtMatmulPreferenceSetAttribute
#define blasLtMatmulHeuristicResult_t cublasLtMatmulHeuristicResult_t
#define blasLtMatmulAlgoGetHeuristic cublasLtMatmulAlgoGetHeuristic
#define blasStatus_t cublasStatus_t
#define BLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define BLAS_OP_N CUBLAS_OP_N
#define BLAS_OP_T CUBLAS_OP_T
#define BLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define BLASLT_MATMUL_DESC_TRANSA CUBLASLT_MATMUL_DESC_TRANSA
#define BLASLT_MATMUL_DESC_TRANSB CUBLASLT_MATMUL_DESC_TRANSB
#define BLASLT_MATMUL_DESC_EPILOGUE CUBLASLT_MATMUL_DESC_EPILOGUE
#define BLASLT_MATMUL_DESC_BIAS_POINTER CUBLASLT_MATMUL_DESC_BIAS_POINTER
#define BLASLT_EPILOGUE_DEFAULT CUBLASLT_EPILOGUE_DEFAULT
#define BLASLT_EPILOGUE_BIAS CUBLASLT_EPILOGUE_BIAS
#define BLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define GPU_R_32F CUDA_R_32F
#define GPU_R_16F CUDA_R_16F
#define GPU_R_16BF CUDA_R_16BF
#endif

#endif  // TIERSCOPE_BACKEND_CUDA_CUDA_VENDOR_H_
