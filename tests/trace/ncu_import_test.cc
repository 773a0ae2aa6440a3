// ParseNcuCsv / ImportNcuCsv on `ncu --csv --page details` output as ncu writes it:
// ==PROF== log lines around the CSV, templated kernel names with commas, thousands
// separators, n/a values, rule rows, malformed rows; plus older and raw-page layouts.
#include "trace/ncu_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include <optional>
#include <string>

#include "test_util.h"

namespace tierscope {
namespace {

using ::tierscope::testing::Contains;
using ::tierscope::testing::TempDir;
using ::tierscope::testing::WriteBytes;

// Two launches profiled with the default section set. Metric rows of the first launch
// carry empty rule columns; those of the second end after "Metric Value" with a
// trailing comma, as recent ncu versions write them.
const char kDetailsCsv[] = R"csv(==PROF== Connected to process 31337 (/usr/bin/python3.11)
loaded 3 tensors "x", "w
==PROF== Profiling "vectorized_elementwise_kernel" - 0: 0%....50%....100% - 9 passes
==PROF== Profiling "gemm_kernel" - 1: 0%....50%....100% - 9 passes
==PROF== Disconnected from process 31337
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","GPU Speed Of Light Throughput","DRAM Frequency","cycle/nsecond","2.62","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Elapsed Cycles","cycle","24,576","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Memory Throughput","%","91.27","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","GPU Speed Of Light Throughput","DRAM Throughput","%","91.27","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","usecond","14.05","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","GPU Speed Of Light Throughput","SM Active Cycles","cycle","21,034.62","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Compute (SM) Throughput","%","12.84","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","SpeedOfLight","","","","SOLBottleneck","OPT","Memory is more heavily utilized than Compute: Look at the ""Memory Workload Analysis"" section to identify the DRAM bottleneck.","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","Launch Statistics","Block Size","","128","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","Launch Statistics","Function Cache Configuration","","CachePreferNone","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","Launch Statistics","Grid Size","","16,384","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","Launch Statistics","Registers Per Thread","register/thread","16","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","Launch Statistics","Threads","thread","2,097,152","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","Launch Statistics","Waves Per SM","","7.76","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","Occupancy","Cluster Occupancy","%","n/a","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","Occupancy","Theoretical Occupancy","%","100","","","","",""
"0","31337","python3.11","gpu-node-01","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","Occupancy","Achieved Occupancy","%","87.52","","","","",""
==WARNING== Found outstanding GPU clock reset, trying to revert...Success.
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","GPU Speed Of Light Throughput","Memory Throughput","%","45.10",
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","GPU Speed Of Light Throughput","DRAM Throughput","%","12.02",
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","usecond","1,210.50",
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","GPU Speed Of Light Throughput","Compute (SM) Throughput","%","78.40",
2,31337,python3.11,gpu-node-01,void f<int, 2>(int),1,7,(32, 1, 1),(1, 1, 1),0,9.0,Occupancy,Achieved Occupancy,%,50.0,,,,,
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Launch Statistics","Block Size","","128",
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Launch Statistics","Grid Size","","2,048",
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Launch Statistics","Registers Per Thread","register/thread","128",
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Launch Statistics","Waves Per SM","","1.94",
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Occupancy","Achieved Occupancy","%","24.61",
"1","31337","python3.11","gpu-node-01","void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Occupancy","","","","TheoreticalOccupancy","OPT","This kernel's theoretical occupancy (25.0%) is limited by the number of required registers.","local","50.23"
"1","31337","python3.11"
==PROF== Report: /tmp/report.ncu-rep
)csv";

constexpr const char* kAddKernel =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char *, 3>>(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char *, 3>)";

TEST(NcuImportTest, ParsesDetailsPage) {
  auto report = ParseNcuCsv(kDetailsCsv, "ncu.csv");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const NcuReport& r = *report;
  EXPECT_EQ(r.source, "ncu.csv");
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.rows, 17 + 10 + 2);
  EXPECT_EQ(r.malformed, 2);
  ASSERT_GE(r.notes.size(), 2u);
  EXPECT_TRUE(Contains(r.notes[0], "line 29: 25 fields, header has 20")) << r.notes[0];
  EXPECT_TRUE(Contains(r.notes[1], "line 36: 3 fields, header has 20")) << r.notes[1];

  const NcuKernel& add = r.kernels[0];
  EXPECT_EQ(add.id, 0);
  EXPECT_EQ(add.name, kAddKernel);
  EXPECT_EQ(add.block_size, "(128, 1, 1)");
  EXPECT_EQ(add.grid_size, "(16384, 1, 1)");
  EXPECT_EQ(add.device, "0");
  EXPECT_EQ(add.cc, "9.0");
  EXPECT_EQ(add.process_id, 31337);
  EXPECT_EQ(add.process_name, "python3.11");
  EXPECT_EQ(add.stream, "7");
  EXPECT_EQ(add.metrics.size(), 16u);

  const NcuMetric* duration = add.Find("Duration");
  ASSERT_NE(duration, nullptr);
  EXPECT_EQ(duration->section, "GPU Speed Of Light Throughput");
  EXPECT_EQ(duration->unit, "usecond");
  EXPECT_DOUBLE_EQ(duration->value, 14.05);
  EXPECT_DOUBLE_EQ(*add.Value("Compute (SM) Throughput"), 12.84);
  EXPECT_DOUBLE_EQ(*add.Value("Memory Throughput"), 91.27);
  EXPECT_DOUBLE_EQ(*add.Value("DRAM Throughput"), 91.27);
  EXPECT_DOUBLE_EQ(*add.Value("Elapsed Cycles"), 24576);
  EXPECT_DOUBLE_EQ(*add.Value("SM Active Cycles"), 21034.62);
  const NcuMetric* grid = add.Find("Launch Statistics", "Grid Size");
  ASSERT_NE(grid, nullptr);
  EXPECT_EQ(grid->raw, "16,384");
  EXPECT_DOUBLE_EQ(grid->value, 16384);
  EXPECT_DOUBLE_EQ(*add.Value("Threads"), 2097152);
  EXPECT_DOUBLE_EQ(*add.Value("Registers Per Thread"), 16);
  EXPECT_EQ(add.Find("Registers Per Thread")->unit, "register/thread");
  EXPECT_DOUBLE_EQ(*add.Value("Waves Per SM"), 7.76);
  EXPECT_DOUBLE_EQ(*add.Value("Achieved Occupancy"), 87.52);
  EXPECT_DOUBLE_EQ(*add.Value("Theoretical Occupancy"), 100);

  const NcuMetric* cluster = add.Find("Cluster Occupancy");
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(cluster->raw, "n/a");
  EXPECT_FALSE(cluster->has_value);
  EXPECT_FALSE(add.Value("Cluster Occupancy").has_value());
  EXPECT_FALSE(add.Find("Function Cache Configuration")->has_value);
  EXPECT_EQ(add.Find("Function Cache Configuration")->raw, "CachePreferNone");
  EXPECT_EQ(add.Find("No Such Metric"), nullptr);
  EXPECT_EQ(add.Find("Occupancy", "Grid Size"), nullptr);

  ASSERT_EQ(add.rules.size(), 1u);
  EXPECT_EQ(add.rules[0].section, "SpeedOfLight");
  EXPECT_EQ(add.rules[0].name, "SOLBottleneck");
  EXPECT_EQ(add.rules[0].type, "OPT");
  EXPECT_TRUE(Contains(add.rules[0].description, "the \"Memory Workload Analysis\" section"));
  EXPECT_FALSE(add.rules[0].has_speedup);

  const NcuKernel* gemm = r.FindKernel(1);
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm, &r.kernels[1]);
  EXPECT_EQ(gemm->name,
            "void gemm_kernel<float, 128, 64>(const float *, const float *, float *, int, int, int)");
  EXPECT_EQ(gemm->grid_size, "(64, 32, 1)");
  EXPECT_EQ(gemm->metrics.size(), 9u);
  EXPECT_DOUBLE_EQ(*gemm->Value("Duration"), 1210.5);
  EXPECT_DOUBLE_EQ(*gemm->Value("Compute (SM) Throughput"), 78.40);
  EXPECT_DOUBLE_EQ(*gemm->Value("Grid Size"), 2048);
  EXPECT_DOUBLE_EQ(*gemm->Value("Registers Per Thread"), 128);
  EXPECT_DOUBLE_EQ(*gemm->Value("Waves Per SM"), 1.94);
  EXPECT_DOUBLE_EQ(*gemm->Value("Achieved Occupancy"), 24.61);
  ASSERT_EQ(gemm->rules.size(), 1u);
  EXPECT_EQ(gemm->rules[0].name, "TheoreticalOccupancy");
  EXPECT_EQ(gemm->rules[0].speedup_type, "local");
  EXPECT_TRUE(gemm->rules[0].has_speedup);
  EXPECT_DOUBLE_EQ(gemm->rules[0].speedup, 50.23);
  EXPECT_EQ(r.FindKernel(2), nullptr);  // only in the malformed row
}

TEST(NcuImportTest, FindsColumnsByNameInAnyOrder) {
  // An older ncu header (with "Kernel Time", no launch geometry), columns shuffled,
  // CRLF line ends, and a quoted field spanning two lines.
  const std::string csv =
      "\"Metric Value\",\"Metric Name\",\"Kernel Name\",\"ID\",\"Kernel Time\",\"Section Name\",\"Metric "
      "Unit\"\r\n"
      "\"1,024.5\",\"Duration\",\"k(int, float)\",\"3\",\"2024-Jan-01 10:00:00\",\"GPU Speed Of "
      "Light\",\"nsecond\"\r\n"
      "\"33.3\",\"Achieved Occupancy\",\"k(int, float)\",\"3\",\"2024-Jan-01 "
      "10:00:00\",\"Occupancy\",\"%\"\r\n"
      "\"7\",\"Note\",\"line one\r\nline two\",\"4\",\"t\",\"S\",\"\"\r\n";
  auto r = ParseNcuCsv(csv, "old.csv");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->kernels.size(), 2u);
  EXPECT_EQ(r->kernels[0].id, 3);
  EXPECT_EQ(r->kernels[0].name, "k(int, float)");
  EXPECT_EQ(r->kernels[0].block_size, "");
  EXPECT_DOUBLE_EQ(*r->kernels[0].Value("Duration"), 1024.5);
  EXPECT_EQ(r->kernels[0].Find("Duration")->unit, "nsecond");
  EXPECT_DOUBLE_EQ(*r->kernels[0].Value("Achieved Occupancy"), 33.3);
  EXPECT_EQ(r->kernels[1].name, "line one\r\nline two");
  EXPECT_EQ(r->malformed, 0);

  // "Function Name" instead of "Kernel Name" and no ID: launches group by name.
  auto named = ParseNcuCsv(
      "Function Name,Section Name,Metric Name,Metric Unit,Metric Value\n"
      "a,S,Duration,usecond,1\nb,S,Duration,usecond,2\na,S,Waves Per SM,,3\n",
      "fn.csv");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  ASSERT_EQ(named->kernels.size(), 2u);
  EXPECT_EQ(named->kernels[0].name, "a");
  EXPECT_EQ(named->kernels[0].metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(*named->kernels[1].Value("Duration"), 2);
}

TEST(NcuImportTest, ReadsTheRawPageLayout) {
  const char csv[] =
      "==PROF== Disconnected from process 1\n"
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
      "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\","
      "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"Mbyte\",\"usecond\",\"%\"\n"
      "\"0\",\"9\",\"app\",\"h\",\"vector_add(const float *, float *)\",\"1\",\"7\",\"(256, 1, 1)\","
      "\"(16, 1, 1)\",\"0\",\"9.0\",\"1,048.58\",\"12.50\",\"73.25\"\n";
  auto r = ParseNcuCsv(csv, "raw.csv");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->kernels.size(), 1u);
  const NcuKernel& k = r->kernels[0];
  EXPECT_EQ(k.name, "vector_add(const float *, float *)");
  EXPECT_EQ(k.block_size, "(256, 1, 1)");
  ASSERT_EQ(k.metrics.size(), 3u);
  EXPECT_EQ(k.Find("dram__bytes_read.sum")->unit, "Mbyte");
  EXPECT_DOUBLE_EQ(*k.Value("dram__bytes_read.sum"), 1048.58);
  EXPECT_DOUBLE_EQ(*k.Value("gpu__time_duration.sum"), 12.5);
  EXPECT_EQ(k.Find("sm__throughput.avg.pct_of_peak_sustained_elapsed")->unit, "%");
  EXPECT_EQ(r->malformed, 0);
}

TEST(NcuImportTest, MissingHeaderIsAnError) {
  for (const char* text : {"", "==PROF== Connected to process 1\nhello from the app\n", "a,b,c\n1,2,3\n",
                           "\"ID\",\"Kernel Name\"\n\"0\",\"k\"\n"}) {
    auto r = ParseNcuCsv(text, "run.log");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(r.status().message(), "run.log")) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "no Nsight Compute CSV header")) << r.status().message();
  }
}

TEST(NcuImportTest, UnclosedQuoteAtTheEndIsMalformed) {
  auto r = ParseNcuCsv(
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Value\"\n"
      "\"0\",\"k\",\"Duration\",\"5\"\n"
      "\"0\",\"k\",\"Threads\",\"12\n",
      "cut.csv");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].metrics.size(), 1u);
  EXPECT_EQ(r->rows, 2);
  EXPECT_EQ(r->malformed, 1);
  EXPECT_TRUE(Contains(r->notes[0], "line 3: a quoted field is not closed"));
}

TEST(NcuImportTest, ValuesNoCounterCanTakeAreShownButNeverConcludedFrom) {
  // Once taken as measured: "Duration us -14.05", a 9127% throughput, "nan". ncu does not
  // clamp a share past 100% (counters of different replay passes): it stays as written,
  // its row kept, and nothing is concluded from it.
  auto r = ParseNcuCsv(
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"k\",\"Duration\",\"usecond\",\"-14.05\"\n"
      "\"0\",\"k\",\"Memory Throughput\",\"%\",\"9127\"\n"
      "\"0\",\"k\",\"DRAM Throughput\",\"%\",\"nan\"\n"
      "\"0\",\"k\",\"Compute (SM) Throughput\",\"%\",\"100.02\"\n"
      "\"0\",\"k\",\"Elapsed Cycles\",\"cycle\",\"-3\"\n"
      "\"0\",\"k\",\"Registers Per Thread\",\"register/thread\",\"n/a\"\n",
      "bad.csv");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->kernels.size(), 1u);
  const NcuKernel& k = r->kernels[0];
  EXPECT_EQ(r->malformed, 0);  // every row read
  EXPECT_EQ(r->implausible, 4);
  EXPECT_FALSE(k.Value("Duration").has_value());
  EXPECT_FALSE(k.Value("Memory Throughput").has_value());
  EXPECT_EQ(k.Find("Memory Throughput")->raw, "9127");  // shown as written
  EXPECT_FALSE(k.Value("DRAM Throughput").has_value());
  EXPECT_FALSE(k.Value("Elapsed Cycles").has_value());
  EXPECT_EQ(k.Value("Compute (SM) Throughput"), std::optional<double>(100.02));  // ncu's rounding at the top
  ASSERT_GE(r->notes.size(), 4u);
  EXPECT_EQ(r->notes[0], "line 2: Duration = -14.05 usecond: a negative usecond value, shown but not concluded from");
  EXPECT_EQ(r->notes[1],
            "line 3: Memory Throughput = 9127 %: a share outside 0-100% (ncu does not clamp), shown but not concluded "
            "from");
  EXPECT_EQ(r->notes[2], "line 4: DRAM Throughput = nan %: not a number, shown but not concluded from");
  EXPECT_EQ(r->notes[3], "line 6: Elapsed Cycles = -3 cycle: a negative cycle value, shown but not concluded from");
}

TEST(NcuImportTest, ImportsFromFile) {
  TempDir dir;
  const std::string path = dir.file("details.csv");
  WriteBytes(path, kDetailsCsv);
  auto r = ImportNcuCsv(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source, path);
  EXPECT_EQ(r->kernels.size(), 2u);

  auto missing = ImportNcuCsv(dir.file("nope.csv"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), dir.file("nope.csv")));

  const std::string log = dir.file("log.txt");
  WriteBytes(log, "==PROF== Connected\n==ERROR== The application returned an error code (1).\n");
  auto no_header = ImportNcuCsv(log);
  ASSERT_FALSE(no_header.ok());
  EXPECT_TRUE(Contains(no_header.status().message(), log));
}

TEST(NcuImportTest, AFileOverTheLimitIsRefusedBeforeItIsRead) {
  TempDir dir;
  const std::string path = dir.file("huge.csv");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(::ftruncate(fileno(f), int64_t{4500} << 20), 0);  // sparse: no disk, no reading
    std::fclose(f);
  }
  auto r = ImportNcuCsv(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(r.status().message(), path + ": 4718592000 bytes, more than the 4294967296"))
      << r.status().message();
}

TEST(NcuImportTest, ParsesNumbers) {
  double v = 0;
  EXPECT_TRUE(ParseNcuNumber("1,234.56", &v));
  EXPECT_DOUBLE_EQ(v, 1234.56);
  EXPECT_TRUE(ParseNcuNumber("1,234,567", &v));
  EXPECT_DOUBLE_EQ(v, 1234567);
  EXPECT_TRUE(ParseNcuNumber(" 87.5% ", &v));
  EXPECT_DOUBLE_EQ(v, 87.5);
  EXPECT_TRUE(ParseNcuNumber("-3", &v));
  EXPECT_DOUBLE_EQ(v, -3);
  EXPECT_TRUE(ParseNcuNumber("+2.5e3", &v));
  EXPECT_DOUBLE_EQ(v, 2500);
  EXPECT_TRUE(ParseNcuNumber("-1,000.5", &v));
  EXPECT_DOUBLE_EQ(v, -1000.5);
  for (const char* bad : {"", "n/a", "N/A", "1,5", "12,34", "1234,567", ",123", "1,234,", "(256, 1, 1)",
                          "CachePreferNone", "nan", "inf", "1.2.3", "-", "%", "1.5,000"}) {
    EXPECT_FALSE(ParseNcuNumber(bad, &v)) << bad;
  }
}

}  // namespace
}  // namespace tierscope
