// The built-in default model: google/bert_uncased_L-2_H-128_A-2's configuration with
// deterministic synthetic weights, written once as a real Hugging Face directory
// (config.json, model.safetensors, vocab.txt) under the user's cache directory.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/paths.h"
#include "core/splitmix.h"
#include "model/safetensors.h"
#include "tierscope/engine.h"

namespace tierscope {
namespace {

constexpr const char* kDirName = "bert_uncased_L-2_H-128_A-2-synthetic-v1";
constexpr uint64_t kSeed = 2026;

// splitmix64 + Box-Muller: the same weights on every machine.
class Rng {
 public:
  explicit Rng(uint64_t seed) : bits_(seed) {}
  uint64_t Next() { return bits_.Next(); }
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }
  float Normal(float stddev) {
    double u1 = Uniform(), u2 = Uniform();
    return static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2));
  }

 private:
  SplitMix64 bits_;
};

BertConfig DefaultConfig() {
  BertConfig c;
  c.vocab_size = 30522;
  c.hidden_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 512;
  c.max_position_embeddings = 512;
  c.type_vocab_size = 2;
  return c;
}

std::string ConfigJson(const BertConfig& c) {
  nlohmann::ordered_json j;
  j["_name_or_path"] = "tierscope/bert_uncased_L-2_H-128_A-2-synthetic";
  j["architectures"] = {"BertModel"};
  j["attention_probs_dropout_prob"] = 0.1;
  j["classifier_dropout"] = nullptr;
  j["hidden_act"] = c.hidden_act;
  j["hidden_dropout_prob"] = 0.1;
  j["hidden_size"] = c.hidden_size;
  j["initializer_range"] = 0.02;
  j["intermediate_size"] = c.intermediate_size;
  j["layer_norm_eps"] = c.layer_norm_eps;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["model_type"] = "bert";
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["pad_token_id"] = c.pad_token_id;
  j["position_embedding_type"] = "absolute";
  j["torch_dtype"] = "float32";
  j["type_vocab_size"] = c.type_vocab_size;
  j["use_cache"] = true;
  j["vocab_size"] = c.vocab_size;
  j["tierscope_synthetic_seed"] = kSeed;
  return j.dump(2) + "\n";
}

// A WordPiece vocabulary with BERT's special ids: [PAD]=0, [unused0..98]=1..99,
// [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103; then characters, ## pieces, words.
std::string VocabText(int64_t size) {
  std::vector<std::string> v;
  v.push_back("[PAD]");
  for (int i = 0; i < 99; ++i) v.push_back("[unused" + std::to_string(i) + "]");
  for (const char* s : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) v.push_back(s);
  std::set<std::string> seen(v.begin(), v.end());
  auto add = [&](const std::string& s) {
    if (static_cast<int64_t>(v.size()) < size && seen.insert(s).second) v.push_back(s);
  };
  for (char ch = '!'; ch <= '~'; ++ch) {
    if (ch >= 'A' && ch <= 'Z') continue;
    add(std::string(1, ch));
  }
  for (char ch = '!'; ch <= '~'; ++ch) {
    if (ch >= 'A' && ch <= 'Z') continue;
    add("##" + std::string(1, ch));
  }
  static const char* kSyllables[] = {"ka", "to", "ri", "ne", "mo", "sa", "lu", "pe",
                                     "di", "go", "va", "shi", "ber", "tin", "qu", "zo"};
  for (int64_t i = 0; static_cast<int64_t>(v.size()) < size; ++i) {
    std::string w;
    int64_t x = i;
    do {
      w += kSyllables[x % 16];
      x /= 16;
    } while (x > 0);
    add(i % 3 == 2 ? "##" + w : w);
  }
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

std::string FloatBytes(const std::vector<float>& f) {
  return std::string(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(float));
}

std::vector<SafetensorsEntry> DefaultWeights(const BertConfig& c) {
  Rng rng(kSeed);
  std::vector<SafetensorsEntry> out;
  auto normal = [&](const std::string& name, std::vector<int64_t> shape, float std, float mean) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> f(static_cast<size_t>(n));
    for (float& x : f) x = mean + rng.Normal(std);
    out.push_back({name, DType::kF32, std::move(shape), FloatBytes(f)});
  };
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  normal("embeddings.word_embeddings.weight", {c.vocab_size, H}, 0.02f, 0.0f);
  normal("embeddings.position_embeddings.weight", {c.max_position_embeddings, H}, 0.02f, 0.0f);
  normal("embeddings.token_type_embeddings.weight", {c.type_vocab_size, H}, 0.02f, 0.0f);
  normal("embeddings.LayerNorm.weight", {H}, 0.05f, 1.0f);
  normal("embeddings.LayerNorm.bias", {H}, 0.02f, 0.0f);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    for (const char* n : {"query", "key", "value"}) {
      normal(p + "attention.self." + n + ".weight", {H, H}, 0.02f, 0.0f);
      normal(p + "attention.self." + n + ".bias", {H}, 0.02f, 0.0f);
    }
    normal(p + "attention.output.dense.weight", {H, H}, 0.02f, 0.0f);
    normal(p + "attention.output.dense.bias", {H}, 0.02f, 0.0f);
    normal(p + "attention.output.LayerNorm.weight", {H}, 0.05f, 1.0f);
    normal(p + "attention.output.LayerNorm.bias", {H}, 0.02f, 0.0f);
    normal(p + "intermediate.dense.weight", {I, H}, 0.02f, 0.0f);
    normal(p + "intermediate.dense.bias", {I}, 0.02f, 0.0f);
    normal(p + "output.dense.weight", {H, I}, 0.02f, 0.0f);
    normal(p + "output.dense.bias", {H}, 0.02f, 0.0f);
    normal(p + "output.LayerNorm.weight", {H}, 0.05f, 1.0f);
    normal(p + "output.LayerNorm.bias", {H}, 0.02f, 0.0f);
  }
  normal("pooler.dense.weight", {H, H}, 0.02f, 0.0f);
  normal("pooler.dense.bias", {H}, 0.02f, 0.0f);
  return out;
}

bool Complete(const std::string& dir) {
  return IsRegularFile(dir + "/config.json") && IsRegularFile(dir + "/model.safetensors") &&
         IsRegularFile(dir + "/vocab.txt");
}

}  // namespace

StatusOr<std::string> EnsureDefaultModel() {
  TS_ASSIGN_OR_RETURN(std::string cache, CacheDir());
  const std::string models = cache + "/models";
  const std::string dir = models + "/" + kDirName;
  if (Complete(dir)) return dir;
  TS_RETURN_IF_ERROR(MakeDirs(models));
  // Build in a private directory, then rename it into place: a concurrent first use
  // never sees a half-written model.
  const std::string tmp = dir + ".tmp." + std::to_string(getpid());
  TS_RETURN_IF_ERROR(MakeDirs(tmp));
  const BertConfig c = DefaultConfig();
  TS_RETURN_IF_ERROR(WriteFileAtomic(tmp + "/config.json", ConfigJson(c)));
  TS_RETURN_IF_ERROR(WriteFileAtomic(tmp + "/vocab.txt", VocabText(c.vocab_size)));
  TS_RETURN_IF_ERROR(WriteSafetensors(tmp + "/model.safetensors", DefaultWeights(c)));
  if (std::rename(tmp.c_str(), dir.c_str()) != 0) {
    // Another process won the race (or a stale partial dir exists): use theirs if whole.
    for (const char* f : {"/config.json", "/vocab.txt", "/model.safetensors"}) {
      std::remove((tmp + f).c_str());
    }
    rmdir(tmp.c_str());
    if (Complete(dir)) return dir;
    return FailedPrecondition("cannot install the default model into " + dir +
                              " (remove that directory and retry)");
  }
  return dir;
}

}  // namespace tierscope
