// The pure parts of `tierscope load`: length specs, the Poisson schedule, its
// percentiles (core/stats.h's), the Prometheus histogram parser and snapshot difference, URL parsing,
// the loopback rule, option checks, the request bodies and the report's text form.
#include "loadgen/load_gen.h"

#include <gtest/gtest.h>

#include "core/stats.h"

#include <cmath>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "loadgen/load_stats.h"
#include "test_util.h"

namespace tierscope {
namespace {

using nlohmann::json;
using testing::Contains;

LengthSpec Spec(const std::string& s) {
  auto spec = ParseLengthSpec(s);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return std::move(spec).value();
}

void ExpectBadLengths(const std::string& s, const std::string& why) {
  auto spec = ParseLengthSpec(s);
  ASSERT_FALSE(spec.ok()) << s;
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(spec.status().message(), "--lengths '" + s + "'"))
      << spec.status().message();
  EXPECT_TRUE(Contains(spec.status().message(), why)) << spec.status().message();
}

TEST(LengthSpec, FixedUniformAndChoiceParseAndDrawInRange) {
  std::mt19937_64 rng(7);
  const LengthSpec fixed = Spec("fixed:128");
  EXPECT_EQ(fixed.kind, LengthSpec::Kind::kFixed);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(fixed.Draw(rng), 128);

  const LengthSpec uniform = Spec("uniform:16-20");
  EXPECT_EQ(uniform.kind, LengthSpec::Kind::kUniform);
  EXPECT_EQ(uniform.Max(), 20);
  std::set<int64_t> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(uniform.Draw(rng));
  EXPECT_EQ(seen, (std::set<int64_t>{16, 17, 18, 19, 20}));

  const LengthSpec choice = Spec("choice:16, 64,512");
  EXPECT_EQ(choice.values, (std::vector<int64_t>{16, 64, 512}));
  seen.clear();
  for (int i = 0; i < 1000; ++i) seen.insert(choice.Draw(rng));
  EXPECT_EQ(seen, (std::set<int64_t>{16, 64, 512}));
  EXPECT_DOUBLE_EQ(choice.Mean(), (16 + 64 + 512) / 3.0);
  EXPECT_EQ(Spec("uniform:3-3").Draw(rng), 3);
}

TEST(LengthSpec, BadSpecsAreRejectedWithTheReason) {
  ExpectBadLengths("128", "no kind");
  ExpectBadLengths("fixed:", "is not a whole number");
  ExpectBadLengths("fixed:12x", "is not a whole number");
  ExpectBadLengths("fixed:-5", "length -5 is outside [3,");
  ExpectBadLengths("fixed:2", "outside [3,");
  ExpectBadLengths("fixed:99999999", "outside [3,");
  ExpectBadLengths("uniform:64", "uniform needs A-B");
  ExpectBadLengths("uniform:64-16", "A <= B");
  ExpectBadLengths("uniform:a-16", "two whole numbers");
  ExpectBadLengths("choice:", "choice needs lengths");
  ExpectBadLengths("choice:16,x", "'x' is not a whole number");
  ExpectBadLengths("normal:128", "unknown kind 'normal'");
}

TEST(PoissonSchedule, MeanGapIsOneOverTheRate) {
  const double rate = 250;
  PoissonSchedule s(rate, 42);
  const int n = 200000;
  double last = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double t = s.Next();
    ASSERT_GT(t, last);
    sum_sq += (t - last) * (t - last);
    last = t;
  }
  const double mean = last / n;
  EXPECT_NEAR(mean, 1 / rate, 0.02 / rate);
  // Exponential gaps: the variance equals the squared mean.
  EXPECT_NEAR(sum_sq / n - mean * mean, mean * mean, 0.05 * mean * mean);
}

TEST(PoissonSchedule, TheSameSeedGivesTheSameScheduleAndAnotherSeedDoesNot) {
  PoissonSchedule a(100, 9), b(100, 9), c(100, 10);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const double ta = a.Next();
    EXPECT_EQ(ta, b.Next());
    differs |= ta != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(Percentiles, TheLoadReportUsesTheOneDefinition) {
  // The load generator's P95 is bench's P95 (core/stats.h: linear between ranks).
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  const json s = SummarizeLatencies(v);
  EXPECT_DOUBLE_EQ(s["p95"].get<double>(), Percentile(v, 95));
  EXPECT_DOUBLE_EQ(s["p95"].get<double>(), 95.05);
}

TEST(Percentiles, SummaryIsUnsortedSafeAndNullWhenEmpty) {
  const json s = SummarizeLatencies({5, 1, 4, 2, 3});
  EXPECT_EQ(s["p50"], 3);
  EXPECT_EQ(s["max"], 5);
  EXPECT_DOUBLE_EQ(s["mean"].get<double>(), 3);
  EXPECT_EQ(s["count"], 5);
  const json e = SummarizeLatencies({});
  EXPECT_TRUE(e["p50"].is_null());
  EXPECT_TRUE(e["mean"].is_null());
  EXPECT_EQ(e["count"], 0);
}

const char* kMetrics =
    "# HELP tierscope_requests_total HTTP requests answered.\n"
    "# TYPE tierscope_requests_total counter\n"
    "tierscope_requests_total{endpoint=\"embed\",code=\"200\"} 40\n"
    "# HELP tierscope_batch_size Inputs per batch run by the engine.\n"
    "# TYPE tierscope_batch_size histogram\n"
    "tierscope_batch_size_bucket{le=\"1\"} 3\n"
    "tierscope_batch_size_bucket{le=\"2\"} 5\n"
    "tierscope_batch_size_bucket{le=\"4\"} 12\n"
    "tierscope_batch_size_bucket{le=\"+Inf\"} 12\n"
    "tierscope_batch_size_sum 40\n"
    "tierscope_batch_size_count 12\n"
    "tierscope_batch_tokens_bucket{le=\"128\"} 1\n";

TEST(PromHistogram, ParsesBucketsSumAndCountAmongOtherMetrics) {
  auto h = ParsePromHistogram(kMetrics, "tierscope_batch_size");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_EQ(h->buckets.size(), 4u);
  EXPECT_EQ(h->buckets[0].le, "1");
  EXPECT_EQ(h->buckets[2].le, "4");
  EXPECT_EQ(h->buckets[2].cumulative, 12);
  EXPECT_EQ(h->buckets[3].le, "+Inf");
  EXPECT_TRUE(std::isinf(h->buckets[3].bound));
  EXPECT_EQ(h->sum, 40);
  EXPECT_EQ(h->count, 12);
}

TEST(PromHistogram, AcceptsOtherLabelsTimestampsCrlfAndAnyBucketOrder) {
  const std::string text =
      "h_bucket{le=\"+Inf\",model=\"m\"} 4 1700000000000\r\n"
      "h_bucket{model=\"m\",le=\"0.5\"} 1\r\n"
      "h_bucket{model=\"m\",le=\"1e+01\",} 4\r\n"
      "h_sum 7.5\r\n"
      "h_count 4\r\n";
  auto h = ParsePromHistogram(text, "h");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_EQ(h->buckets.size(), 3u);
  EXPECT_EQ(h->buckets[0].le, "0.5");
  EXPECT_EQ(h->buckets[1].bound, 10);
  EXPECT_EQ(h->buckets[2].le, "+Inf");
  EXPECT_EQ(h->sum, 7.5);
}

void ExpectMalformed(const std::string& text, const std::string& why) {
  auto h = ParsePromHistogram(text, "h");
  ASSERT_FALSE(h.ok()) << text;
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument) << h.status().ToString();
  EXPECT_TRUE(Contains(h.status().message(), why)) << h.status().message();
}

TEST(PromHistogram, MalformedLinesAreRejectedWithLineNumberAndReason) {
  const std::string tail = "h_bucket{le=\"+Inf\"} 1\nh_count 1\n";
  ExpectMalformed("h_bucket{le=\"1\"} one\n" + tail,
                  "metrics line 1 'h_bucket{le=\"1\"} one': value 'one' is not a number");
  ExpectMalformed("# c\nh_bucket{le=\"1\" 1\n" + tail, "metrics line 2");
  ExpectMalformed("h_bucket{le=1} 1\n" + tail, "label 'le' has no quoted value");
  ExpectMalformed("h_bucket{le=\"1} 1\n" + tail, "unterminated value");
  ExpectMalformed("h_bucket{} 1\n" + tail, "a bucket without an le label");
  ExpectMalformed("h_bucket{le=\"x\"} 1\n" + tail, "le=\"x\" is not a number");
  ExpectMalformed("h_bucket{le=\"1\"}\n" + tail, "no value");
  ExpectMalformed("h_bucket{le=\"1\"} 1 2 3\n" + tail, "unexpected text after the value");
  ExpectMalformed("h_bucket{le=\"1\"} 1\nh_bucket{le=\"1.0\"} 1\n" + tail, "repeated bucket");
  ExpectMalformed("h_bucket{le=\"1\"} 1\nh_count 1\n", "no le=\"+Inf\" bucket");
  ExpectMalformed("h_bucket{le=\"+Inf\"} 1\n", "has no h_count");
  ExpectMalformed("h_bucket{le=\"1\"} 2\n" + tail, "counts fewer than le=\"1\"");
  ExpectMalformed("h_bucket{le=\"+Inf\"} 2\nh_count 1\n",
                  "h_count (1) differs from the +Inf bucket (2)");
}

TEST(PromHistogram, AMissingHistogramIsNotFound) {
  auto h = ParsePromHistogram("other_bucket{le=\"1\"} 1\nh_other 3\n", "h");
  EXPECT_EQ(h.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(h.status().message(), "no histogram h"));
}

TEST(PromHistogram, DeltaIsPerBucketNonCumulativeWithMeanSize) {
  auto before = ParsePromHistogram(kMetrics, "tierscope_batch_size");
  const std::string later =
      "tierscope_batch_size_bucket{le=\"1\"} 4\n"
      "tierscope_batch_size_bucket{le=\"2\"} 9\n"
      "tierscope_batch_size_bucket{le=\"4\"} 22\n"
      "tierscope_batch_size_bucket{le=\"+Inf\"} 23\n"
      "tierscope_batch_size_sum 85\n"
      "tierscope_batch_size_count 23\n";
  auto after = ParsePromHistogram(later, "tierscope_batch_size");
  ASSERT_TRUE(before.ok() && after.ok());
  auto d = HistogramDelta(*before, *after);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)["count"], 11);
  EXPECT_EQ((*d)["inputs"], 45);
  EXPECT_NEAR((*d)["mean_size"].get<double>(), 45.0 / 11, 1e-12);
  EXPECT_EQ((*d)["histogram"], json({{"1", 1}, {"2", 3}, {"4", 6}, {"+Inf", 1}}));

  auto none = HistogramDelta(*after, *after);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)["count"], 0);
  EXPECT_TRUE((*none)["mean_size"].is_null());

  auto restarted = HistogramDelta(*after, *before);
  EXPECT_EQ(restarted.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(restarted.status().message(), "restart"));
}

TEST(HttpUrl, ParsesHostAndPort) {
  auto u = ParseHttpUrl("http://127.0.0.1:8080");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8080);
  u = ParseHttpUrl("http://localhost/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "localhost");
  EXPECT_EQ(u->port, 80);
  u = ParseHttpUrl("HTTP://[::1]:18080");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 18080);
}

TEST(HttpUrl, RejectsHttpsAndGarbage) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"https://127.0.0.1:8443", "https is not supported"},
      {"ftp://127.0.0.1", "unsupported scheme 'ftp'"},
      {"127.0.0.1:8080", "no http:// scheme"},
      {"http://", "no host"},
      {"http://:8080", "no host"},
      {"http://127.0.0.1:", "empty port"},
      {"http://127.0.0.1:0", "not in 1..65535"},
      {"http://127.0.0.1:70000", "not in 1..65535"},
      {"http://127.0.0.1:80a", "not in 1..65535"},
      {"http://127.0.0.1:8080/embed", "a path is not allowed"},
      {"http://user@127.0.0.1", "unexpected characters"},
      {"http://[::1", "unterminated"},
      {"garbage", "no http:// scheme"},
  };
  for (const auto& [url, why] : bad) {
    auto u = ParseHttpUrl(url);
    ASSERT_FALSE(u.ok()) << url;
    EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(u.status().message(), "--url '" + url + "'")) << u.status().message();
    EXPECT_TRUE(Contains(u.status().message(), why)) << u.status().message();
  }
}

TEST(Loopback, LoopbackHostsAreRecognised) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LocalHost",
                        "api.localhost", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"}) {
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  }
  for (const char* h : {"10.0.0.1", "0.0.0.0", "::", "192.168.1.10", "example.com", "localhost.com",
                        "::ffff:10.0.0.1", "128.0.0.1", ""}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
}

TEST(LoadOptions, RemoteHostsNeedAllowRemote) {
  LoadOptions o;
  o.url = "http://10.1.2.3:8080";
  const Status s = CheckLoadOptions(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s.message(), "not a loopback host; pass --allow-remote"));
  o.allow_remote = true;
  EXPECT_TRUE(CheckLoadOptions(o).ok());
  o.url = "http://localhost:8080";
  o.allow_remote = false;
  EXPECT_TRUE(CheckLoadOptions(o).ok());
}

TEST(LoadOptions, BadOptionsNameTheOption) {
  auto expect_bad = [](LoadOptions o, const std::string& option) {
    const Status s = CheckLoadOptions(o);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << option;
    EXPECT_TRUE(Contains(s.message(), option)) << s.message();
  };
  EXPECT_TRUE(CheckLoadOptions(LoadOptions()).ok());
  LoadOptions o;
  o.rate = 0;
  expect_bad(o, "--rate");
  o = LoadOptions();
  o.rate = -3;
  expect_bad(o, "--rate");
  o.mode = "closed";  // every flag is checked, whichever mode uses it
  expect_bad(o, "--rate");
  o = LoadOptions();
  o.concurrency = 0;  // open loop: unused, yet out of range
  expect_bad(o, "--concurrency");
  o.concurrency = 100000000;
  expect_bad(o, "--concurrency");
  o.mode = "closed";
  expect_bad(o, "--concurrency");
  // One bad field at a time, each on fresh defaults.
  const std::vector<std::pair<std::function<void(LoadOptions&)>, std::string>> cases = {
      {[](LoadOptions& x) { x.duration_s = 0; }, "--duration"},
      {[](LoadOptions& x) { x.warmup_s = 10; }, "--warmup"},
      {[](LoadOptions& x) { x.lengths = "fixed:1"; }, "--lengths"},
      {[](LoadOptions& x) { x.url = "https://127.0.0.1:8080"; }, "https"},
      {[](LoadOptions& x) { x.endpoint = "generate"; }, "--endpoint"},
      {[](LoadOptions& x) { x.mode = "burst"; }, "--mode"},
      {[](LoadOptions& x) { x.timeout_s = 0; }, "--timeout"},
      {[](LoadOptions& x) { x.inputs_per_request = 0; }, "--inputs-per-request"},
      {[](LoadOptions& x) { x.max_connections = 0; }, "--max-connections"},
      {[](LoadOptions& x) {
         x.endpoint = "infer";
         x.infer_outputs = " , ";
       },
       "--outputs"},
  };
  for (const auto& [mutate, option] : cases) {
    LoadOptions bad;
    mutate(bad);
    expect_bad(bad, option);
  }
}

TEST(RunLoad, BadOptionsFailBeforeAnyTraffic) {
  LoadOptions o;
  o.url = "http://192.0.2.1:8080";
  EXPECT_EQ(RunLoad(o).status().code(), StatusCode::kInvalidArgument);
}

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST(Bodies, EmbedInputOfLTokensHasLMinusTwoSingleLetterWords) {
  std::mt19937_64 rng(3);
  for (int64_t len : {3, 4, 17, 128}) {
    const std::string words = RandomWords(len, rng);
    const auto w = Words(words);
    ASSERT_EQ(static_cast<int64_t>(w.size()), len - 2);
    for (const auto& word : w) {
      ASSERT_EQ(word.size(), 1u);
      EXPECT_TRUE(word[0] >= 'a' && word[0] <= 'z');
    }
    EXPECT_EQ(words.size(), static_cast<size_t>(2 * (len - 2) - 1));  // single spaces
  }
}

TEST(Bodies, EmbedBodyIsAStringForOneInputAndAnArrayForMore) {
  std::mt19937_64 rng(3);
  const json one = json::parse(BuildEmbedBody({10}, rng));
  ASSERT_TRUE(one["inputs"].is_string());
  EXPECT_EQ(Words(one["inputs"].get<std::string>()).size(), 8u);
  const json many = json::parse(BuildEmbedBody({5, 7, 3}, rng));
  ASSERT_TRUE(many["inputs"].is_array());
  ASSERT_EQ(many["inputs"].size(), 3u);
  EXPECT_EQ(Words(many["inputs"][0].get<std::string>()).size(), 3u);
  EXPECT_EQ(Words(many["inputs"][1].get<std::string>()).size(), 5u);
  EXPECT_EQ(Words(many["inputs"][2].get<std::string>()).size(), 1u);
}

TEST(Bodies, InferBodyHasKServeShapeIdsAndPaddedMask) {
  std::mt19937_64 rng(5);
  const json b = json::parse(BuildInferBody({4, 6}, {"last_hidden_state", "pooler_output"}, rng));
  ASSERT_EQ(b["inputs"].size(), 2u);
  const json& ids = b["inputs"][0];
  const json& mask = b["inputs"][1];
  EXPECT_EQ(ids["name"], "input_ids");
  EXPECT_EQ(mask["name"], "attention_mask");
  EXPECT_EQ(ids["datatype"], "INT64");
  EXPECT_EQ(mask["datatype"], "INT64");
  EXPECT_EQ(ids["shape"], json({2, 6}));
  EXPECT_EQ(mask["shape"], json({2, 6}));
  const auto data = ids["data"].get<std::vector<int64_t>>();
  ASSERT_EQ(data.size(), 12u);
  // Row 0: [CLS] x x [SEP] then padding; row 1: [CLS] x x x x [SEP].
  EXPECT_EQ(data[0], 101);
  EXPECT_EQ(data[3], 102);
  EXPECT_EQ(data[4], 0);
  EXPECT_EQ(data[5], 0);
  EXPECT_EQ(data[6], 101);
  EXPECT_EQ(data[11], 102);
  for (int i : {1, 2, 7, 8, 9, 10}) {
    EXPECT_GE(data[i], 1000);
    EXPECT_LT(data[i], 2000);
  }
  EXPECT_EQ(mask["data"].get<std::vector<int64_t>>(),
            (std::vector<int64_t>{1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(b["outputs"],
            json::parse(R"([{"name":"last_hidden_state"},{"name":"pooler_output"}])"));

  const json single = json::parse(BuildInferBody({3}, {"last_hidden_state"}, rng));
  EXPECT_EQ(single["inputs"][0]["shape"], json({1, 3}));
  EXPECT_EQ(single["inputs"][1]["data"], json({1, 1, 1}));
}

TEST(Bodies, TheSameSeedGivesTheSameBodies) {
  std::mt19937_64 a(11), b(11);
  EXPECT_EQ(BuildEmbedBody({64, 9}, a), BuildEmbedBody({64, 9}, b));
  EXPECT_EQ(BuildInferBody({8}, {"last_hidden_state"}, a),
            BuildInferBody({8}, {"last_hidden_state"}, b));
}

TEST(Report, TextShowsCountsErrorsLatenciesBatchesAndWarnings) {
  const json r = json::parse(R"({
    "options": {"url": "http://127.0.0.1:8080", "endpoint": "embed", "mode": "open", "rate": 50,
                "lengths": "fixed:128", "inputs_per_request": 1, "warmup_s": 0},
    "issued": 500, "sent": 500, "completed": 498, "ok": 490,
    "errors": {"429": 8, "timeout": 2},
    "duration_s": 10, "throughput_rps": 49, "inputs_per_s": 49, "offered_rps": 50,
    "latency_ms": {"p50": 3.5, "p90": 7, "p95": 8, "p99": 12.25, "max": 30, "mean": 4},
    "server_batches": {"count": 200, "inputs": 490, "mean_size": 2.45,
                       "histogram": {"1": 50, "2": 100, "4": 50, "8": 0, "+Inf": 0}},
    "max_client_queue": 3, "max_connections_used": 9, "connections_opened": 9,
    "warnings": ["something to see"]})");
  const std::string text = FormatLoadReport(r);
  EXPECT_TRUE(Contains(text, "open loop at 50.0 req/s")) << text;
  EXPECT_TRUE(Contains(text, "ok 490, errors 429: 8, timeout: 2")) << text;
  EXPECT_TRUE(Contains(text, "p99 12.25")) << text;
  EXPECT_TRUE(Contains(text, "200 batches, 490 inputs, mean size 2.45")) << text;
  EXPECT_TRUE(Contains(text, "<=1: 50 <=2: 100 <=4: 50\n")) << text;
  EXPECT_TRUE(Contains(text, "max queue 3")) << text;
  EXPECT_TRUE(Contains(text, "warning: something to see")) << text;

  const json bare = json::parse(R"({"options": {"mode": "closed", "concurrency": 4},
    "latency_ms": {"p50": null}, "server_batches": null,
    "server_metrics_error": "GET /metrics: connect: Connection refused"})");
  const std::string t2 = FormatLoadReport(bare);
  EXPECT_TRUE(Contains(t2, "closed loop with 4 clients")) << t2;
  EXPECT_TRUE(Contains(t2, "p50 -")) << t2;
  EXPECT_TRUE(Contains(t2, "no batch statistics: GET /metrics: connect")) << t2;
}

}  // namespace
}  // namespace tierscope
