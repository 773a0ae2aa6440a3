// The server's router without sockets: what each path and method gets, a drain that
// refuses every inference route (/tokenize too), and KServe's outputs refused when a
// name repeats or is unknown — the decisions Session::Route acts on.
#include "serve/http_router.h"

#include <gtest/gtest.h>

#include <string>

namespace tierscope {
namespace {

namespace http = boost::beast::http;

class RouterTest : public ::testing::Test {
 protected:
  RouterTest()
      : tokenizer_(*WordPieceTokenizer::FromVocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world"}, true,
                                                  "test-vocab")) {
    limits_.max_client_batch_size = 4;
    limits_.max_input_length = 16;
    limits_.vocab_size = 6;
    limits_.type_vocab_size = 2;
    config_.vocab_size = 6;
    ctx_.limits = &limits_;
    ctx_.tokenizer = &tokenizer_;
    ctx_.model_name = "m";
    ctx_.config = &config_;
    ctx_.has_pooler = true;
    ctx_.info = [] { return std::string("{\"model_id\":\"m\"}"); };
    ctx_.metrics = [](bool ready) { return std::string(ready ? "ready" : "not ready"); };
  }

  // The decision, and for a parse, what it gives.
  RouteDecision Route(http::verb method, const std::string& target, const std::string& body = "") {
    req_ = {};
    req_.method(method);
    req_.target(target);
    req_.version(11);
    req_.body() = body;
    req_.prepare_payload();
    RouteDecision d = RouteRequest(ctx_, req_);
    parsed_ = Parsed{};
    if (d.parse) parsed_.error = d.parse(parsed_);
    return d;
  }

  ApiLimits limits_;
  BertConfig config_;
  WordPieceTokenizer tokenizer_;
  RouteContext ctx_;
  http::request<http::string_body> req_;
  Parsed parsed_;
};

TEST_F(RouterTest, EachPathAndMethodGetsItsAnswerOrItsParse) {
  EXPECT_EQ(Route(http::verb::get, "/health").code, 200);
  EXPECT_EQ(Route(http::verb::get, "/info").body, "{\"model_id\":\"m\"}");
  EXPECT_EQ(Route(http::verb::get, "/metrics?x=1").body, "ready");
  RouteDecision d = Route(http::verb::get, "/nope");
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, 404);
  d = Route(http::verb::get, "/embed");
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, 405);
  d = Route(http::verb::post, "/embed", "{\"inputs\": \"hello world\"}");
  ASSERT_TRUE(d.kind);
  EXPECT_EQ(*d.kind, RequestKind::kEmbed);
  EXPECT_FALSE(parsed_.error);
  EXPECT_EQ(parsed_.request.inputs.size(), 1u);
  d = Route(http::verb::post, "/tokenize", "{\"inputs\": \"hello\"}");
  ASSERT_TRUE(d.kind);
  EXPECT_EQ(*d.kind, RequestKind::kTokenize);
  EXPECT_FALSE(parsed_.error);
  EXPECT_NE(parsed_.body.find("hello"), std::string::npos);  // the whole response
  d = Route(http::verb::post, "/v1/embeddings", "{\"input\": [[2, 4, 3]], \"model\": \"m\"}");
  ASSERT_TRUE(d.kind);
  EXPECT_EQ(*d.kind, RequestKind::kOpenAi);
  EXPECT_FALSE(parsed_.error) << parsed_.error->message;
  d = Route(http::verb::post, "/v2/models/other/infer", "{}");
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, 404);
}

TEST_F(RouterTest, ADrainRefusesEveryInferenceRouteTokenizeToo) {
  ctx_.draining = true;
  for (const char* path : {"/embed", "/", "/tokenize", "/v1/embeddings", "/v2/models/m/infer"}) {
    const RouteDecision d = Route(http::verb::post, path, "{\"inputs\": \"hello\"}");
    ASSERT_TRUE(d.error) << path;
    EXPECT_EQ(d.error->code, 503) << path;
    EXPECT_NE(d.error->message.find("draining"), std::string::npos) << path;
    EXPECT_TRUE(d.close) << path;  // and the connection closes after the answer
    EXPECT_FALSE(d.parse) << path;
  }
  EXPECT_EQ(Route(http::verb::get, "/health").code, 503);
  EXPECT_EQ(Route(http::verb::get, "/v2/health/live").code, 200);
  EXPECT_EQ(Route(http::verb::get, "/v2/models/m/ready").code, 503);
  EXPECT_EQ(Route(http::verb::get, "/metrics").body, "not ready");
}

TEST_F(RouterTest, RepeatedAndUnknownOutputsAre400NamingThem) {
  const std::string inputs =
      "{\"inputs\": [{\"name\": \"input_ids\", \"datatype\": \"INT64\", \"shape\": [1, 3], \"data\": [2, 4, 3]}], ";
  RouteDecision d = Route(http::verb::post, "/v2/models/m/infer",
                          inputs + "\"outputs\": [{\"name\": \"last_hidden_state\"}, {\"name\": \"last_hidden_state\"}]}");
  ASSERT_TRUE(d.kind);
  ASSERT_TRUE(parsed_.error);
  EXPECT_EQ(parsed_.error->code, 400);
  EXPECT_NE(parsed_.error->message.find("`last_hidden_state` is requested more than once"), std::string::npos)
      << parsed_.error->message;
  Route(http::verb::post, "/v2/models/m/infer", inputs + "\"outputs\": [{\"name\": \"logits\"}]}");
  ASSERT_TRUE(parsed_.error);
  EXPECT_EQ(parsed_.error->code, 400);
  EXPECT_NE(parsed_.error->message.find("unknown output `logits`"), std::string::npos) << parsed_.error->message;
  // A long unknown name is clipped in the error, not echoed whole.
  Route(http::verb::post, "/v2/models/m/infer", inputs + "\"outputs\": [{\"name\": \"" + std::string(100000, 'x') + "\"}]}");
  ASSERT_TRUE(parsed_.error);
  EXPECT_LT(parsed_.error->message.size(), 400u);
  Route(http::verb::post, "/v2/models/m/infer",
        inputs + "\"outputs\": [{\"name\": \"pooler_output\"}, {\"name\": \"last_hidden_state\"}]}");
  EXPECT_FALSE(parsed_.error) << parsed_.error->message;
  EXPECT_EQ(parsed_.call.outputs.size(), 2u);
}

TEST_F(RouterTest, WithoutAVocabularyTextRoutesAre422AndTokenArraysStillServe) {
  ctx_.tokenizer = nullptr;
  for (const char* path : {"/embed", "/tokenize"}) {
    const RouteDecision d = Route(http::verb::post, path, "{\"inputs\": \"hello\"}");
    ASSERT_TRUE(d.error) << path;
    EXPECT_EQ(d.error->code, 422) << path;
    EXPECT_NE(d.error->message.find("no vocab.txt"), std::string::npos);
  }
  const RouteDecision d = Route(http::verb::post, "/v1/embeddings", "{\"input\": [[2, 4, 3]], \"model\": \"m\"}");
  ASSERT_TRUE(d.kind);
  EXPECT_FALSE(parsed_.error);
}

}  // namespace
}  // namespace tierscope
