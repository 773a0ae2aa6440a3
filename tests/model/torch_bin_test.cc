// Tests for LoadTorchBin: zip archives written here with libzip around hand-built
// pickle bytes in the shape torch.save emits, covering valid state dicts and every
// rejection path.
#include "model/torch_bin.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zip.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tierscope/dtype.h"

namespace tierscope {
namespace {

namespace fs = std::filesystem;
using std::string_literals::operator""s;

// Builds pickle bytes opcode by opcode.
class PickleBuilder {
 public:
  PickleBuilder& Raw(std::string_view b) {
    out_.append(b.data(), b.size());
    return *this;
  }
  PickleBuilder& Op(char op) {
    out_ += op;
    return *this;
  }
  PickleBuilder& Str(std::string_view s) {  // BINUNICODE
    out_ += 'X';
    AppendLe(s.size(), 4);
    return Raw(s);
  }
  PickleBuilder& Int(int64_t v) {
    if (v >= 0 && v < 256) {
      out_ += 'K';
      AppendLe(static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      out_ += 'M';
      AppendLe(static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';
      AppendLe(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    } else {
      out_ += '\x8a';
      AppendLe(8, 1);
      AppendLe(static_cast<uint64_t>(v), 8);
    }
    return *this;
  }
  PickleBuilder& Global(std::string_view module, std::string_view name) {
    out_ += 'c';
    out_.append(module).append("\n").append(name).append("\n");
    return *this;
  }
  PickleBuilder& Put(uint8_t memo) {  // BINPUT
    out_ += 'q';
    out_ += static_cast<char>(memo);
    return *this;
  }
  PickleBuilder& IntTuple(const std::vector<int64_t>& v) {
    Op('(');
    for (int64_t x : v) Int(x);
    return Op('t');
  }
  // Pushes `_rebuild_tensor_v2((storage pid), offset, sizes, strides, False, OrderedDict())`.
  PickleBuilder& Tensor(std::string_view storage_type, std::string_view key, int64_t numel,
                        int64_t offset, const std::vector<int64_t>& sizes,
                        const std::vector<int64_t>& strides) {
    Global("torch._utils", "_rebuild_tensor_v2").Op('(');
    Op('(').Str("storage").Global("torch", storage_type).Str(key).Str("cpu").Int(numel);
    Op('t').Op('Q');
    Int(offset).IntTuple(sizes).IntTuple(strides).Op('\x89');
    Global("collections", "OrderedDict").Op(')').Op('R');
    return Op('t').Op('R');
  }
  const std::string& bytes() const { return out_; }

 private:
  void AppendLe(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  std::string out_;
};

struct TensorEntry {
  std::string name;
  std::string storage_type;
  std::string key;
  int64_t numel;
  int64_t offset;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

// `\x80\x02 } q\x00 ( <name> <tensor> ... u .` as protocol-2 torch.save writes it.
std::string StateDictPickle(const std::vector<TensorEntry>& entries) {
  PickleBuilder p;
  p.Raw("\x80\x02").Op('}').Put(0).Op('(');
  for (const TensorEntry& e : entries) {
    p.Str(e.name).Tensor(e.storage_type, e.key, e.numel, e.offset, e.sizes, e.strides);
  }
  return p.Op('u').Op('.').bytes();
}

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::vector<float> Floats(const HostTensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (!out.empty()) std::memcpy(out.data(), t.data, out.size() * sizeof(float));
  return out;
}

class TorchBinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("torch_bin_test_" + std::to_string(getpid()) + "_" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a stored (uncompressed) zip holding `entries` and returns its path.
  std::string WriteZip(const std::string& file,
                       const std::vector<std::pair<std::string, std::string>>& entries,
                       int32_t method = ZIP_CM_STORE) {
    std::string path = (dir_ / file).string();
    int err = 0;
    zip_t* za = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    EXPECT_NE(za, nullptr) << "zip_open error " << err;
    if (za == nullptr) return path;
    for (const auto& [name, data] : entries) {
      zip_source_t* src = zip_source_buffer(za, data.data(), data.size(), 0);
      zip_int64_t idx = zip_file_add(za, name.c_str(), src, ZIP_FL_OVERWRITE);
      EXPECT_GE(idx, 0) << zip_strerror(za);
      zip_set_file_compression(za, static_cast<zip_uint64_t>(idx), method, 0);
    }
    EXPECT_EQ(zip_close(za), 0);
    return path;
  }

  // A checkpoint with folder "archive/", a data.pkl and the given storages.
  std::string WriteCheckpoint(const std::string& pickle,
                              std::vector<std::pair<std::string, std::string>> storages,
                              const std::string& folder = "archive") {
    std::vector<std::pair<std::string, std::string>> entries = {
        {folder + "/data.pkl", pickle}, {folder + "/byteorder", "little"}};
    for (auto& [key, data] : storages) entries.emplace_back(folder + "/data/" + key, data);
    entries.emplace_back(folder + "/version", "3\n");
    entries.emplace_back(folder + "/.data/serialization_id", "1234");
    return WriteZip(folder + ".bin", entries);
  }

  std::string ErrorOf(const std::string& path) {
    StatusOr<TensorMap> r = LoadTorchBin(path);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  }

  fs::path dir_;
};

std::string F32Storage(int n, float start = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<float>(i);
  return Bytes(v);
}

TEST(ShapeToStringTest, FormatsDimsAndScalars) {
  EXPECT_EQ(ShapeToString({2, 128}), "[2, 128]");
  EXPECT_EQ(ShapeToString({7}), "[7]");
  EXPECT_EQ(ShapeToString({}), "[]");
}

TEST_F(TorchBinTest, LoadsF32F16AndBF16TensorsWithValuesShapesAndDTypes) {
  std::vector<uint16_t> half = {FloatToHalf(1.5f), FloatToHalf(-2.0f), FloatToHalf(0.25f)};
  std::vector<uint16_t> bf = {FloatToBF16(3.0f), FloatToBF16(-0.5f)};
  std::string pickle = StateDictPickle({
      {"encoder.weight", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}},
      {"encoder.bias", "HalfStorage", "1", 3, 0, {3}, {1}},
      {"norm.weight", "BFloat16Storage", "2", 2, 0, {2}, {1}},
  });
  std::string path = WriteCheckpoint(
      pickle, {{"0", F32Storage(6)}, {"1", Bytes(half)}, {"2", Bytes(bf)}});
  StatusOr<TensorMap> r = LoadTorchBin(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source, path);
  ASSERT_EQ(r->tensors.size(), 3u);
  EXPECT_NE(r->storage, nullptr);

  const HostTensor& w = r->tensors.at("encoder.weight");
  EXPECT_EQ(w.dtype, DType::kF32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.bytes, 24u);
  EXPECT_EQ(Floats(w), (std::vector<float>{0, 1, 2, 3, 4, 5}));

  const HostTensor& b = r->tensors.at("encoder.bias");
  EXPECT_EQ(b.dtype, DType::kF16);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{3}));
  ASSERT_EQ(b.bytes, 6u);
  const auto* hb = reinterpret_cast<const uint16_t*>(b.data);
  EXPECT_EQ(HalfToFloat(hb[0]), 1.5f);
  EXPECT_EQ(HalfToFloat(hb[1]), -2.0f);
  EXPECT_EQ(HalfToFloat(hb[2]), 0.25f);

  const HostTensor& n = r->tensors.at("norm.weight");
  EXPECT_EQ(n.dtype, DType::kBF16);
  ASSERT_EQ(n.bytes, 4u);
  const auto* nb = reinterpret_cast<const uint16_t*>(n.data);
  EXPECT_EQ(BF16ToFloat(nb[0]), 3.0f);
  EXPECT_EQ(BF16ToFloat(nb[1]), -0.5f);
}

TEST_F(TorchBinTest, TensorDataOutlivesTheLoaderViaStorageOwner) {
  std::string path = WriteCheckpoint(
      StateDictPickle({{"w", "FloatStorage", "0", 4, 0, {4}, {1}}}), {{"0", F32Storage(4, 10)}});
  HostTensor w;
  std::shared_ptr<const void> owner;
  {
    StatusOr<TensorMap> r = LoadTorchBin(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    w = r->tensors.at("w");
    owner = r->storage;
  }
  fs::remove(path);
  EXPECT_EQ(Floats(w), (std::vector<float>{10, 11, 12, 13}));
}

TEST_F(TorchBinTest, MaterialisesTransposedStrideView) {
  // storage [[0,1,2],[3,4,5]] viewed as its transpose: size (3,2), stride (1,3).
  std::string path = WriteCheckpoint(
      StateDictPickle({{"t", "FloatStorage", "0", 6, 0, {3, 2}, {1, 3}}}),
      {{"0", F32Storage(6)}});
  StatusOr<TensorMap> r = LoadTorchBin(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const HostTensor& t = r->tensors.at("t");
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t.bytes, 24u);
  EXPECT_EQ(Floats(t), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST_F(TorchBinTest, MaterialisesSliceAndZeroStrideBroadcastViews) {
  std::string path = WriteCheckpoint(
      StateDictPickle({
          // Column 1 of a 3x4 matrix: offset 1, size (3,), stride (4,).
          {"col", "FloatStorage", "0", 12, 1, {3}, {4}},
          // Row 2 repeated twice: size (2, 4), stride (0, 1), offset 8.
          {"rep", "FloatStorage", "0", 12, 8, {2, 4}, {0, 1}},
          // A 2x2 block at (1,1): offset 5, size (2, 2), stride (4, 1).
          {"blk", "FloatStorage", "0", 12, 5, {2, 2}, {4, 1}},
      }),
      {{"0", F32Storage(12)}});
  StatusOr<TensorMap> r = LoadTorchBin(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats(r->tensors.at("col")), (std::vector<float>{1, 5, 9}));
  EXPECT_EQ(Floats(r->tensors.at("rep")), (std::vector<float>{8, 9, 10, 11, 8, 9, 10, 11}));
  EXPECT_EQ(Floats(r->tensors.at("blk")), (std::vector<float>{5, 6, 9, 10}));
}

TEST_F(TorchBinTest, TiedTensorsSharingOneStorageAtDifferentOffsetsBothLoad) {
  std::string path = WriteCheckpoint(
      StateDictPickle({
          {"first", "FloatStorage", "shared", 8, 0, {2, 2}, {2, 1}},
          {"second", "FloatStorage", "shared", 8, 4, {4}, {1}},
          {"tied", "FloatStorage", "shared", 8, 0, {2, 2}, {2, 1}},
      }),
      {{"shared", F32Storage(8)}});
  StatusOr<TensorMap> r = LoadTorchBin(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats(r->tensors.at("first")), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(Floats(r->tensors.at("second")), (std::vector<float>{4, 5, 6, 7}));
  // Contiguous views point into the one storage read.
  EXPECT_EQ(r->tensors.at("first").data, r->tensors.at("tied").data);
  EXPECT_EQ(r->tensors.at("first").data + 16, r->tensors.at("second").data);
}

TEST_F(TorchBinTest, AcceptsArchiveFolderNotNamedArchive) {
  std::string path = WriteCheckpoint(
      StateDictPickle({{"w", "FloatStorage", "0", 2, 0, {2}, {1}}}), {{"0", F32Storage(2)}},
      "pytorch_model");
  StatusOr<TensorMap> r = LoadTorchBin(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats(r->tensors.at("w")), (std::vector<float>{0, 1}));
}

TEST_F(TorchBinTest, ReadsDeflateCompressedEntries) {
  std::string path = WriteZip(
      "deflate.bin",
      {{"model/data.pkl", StateDictPickle({{"w", "FloatStorage", "0", 256, 0, {16, 16}, {16, 1}}})},
       {"model/data/0", F32Storage(256)}},
      ZIP_CM_DEFLATE);
  StatusOr<TensorMap> r = LoadTorchBin(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats(r->tensors.at("w"))[255], 255.0f);
}

TEST_F(TorchBinTest, AcceptsOrderedDictWithMetadataBuildParameterAndIntDTypes) {
  // OrderedDict() via REDUCE, a Parameter wrapper, then BUILD with {'_metadata': {...}}.
  PickleBuilder p;
  p.Raw("\x80\x02").Global("collections", "OrderedDict").Put(0).Op(')').Op('R').Put(1);
  p.Op('(');
  p.Str("p").Global("torch._utils", "_rebuild_parameter").Op('(');
  p.Tensor("FloatStorage", "0", 3, 0, {3}, {1});
  p.Op('\x88').Global("collections", "OrderedDict").Op(')').Op('R').Op('t').Op('R');
  p.Str("steps").Tensor("LongStorage", "1", 1, 0, {}, {});
  p.Str("mask").Tensor("BoolStorage", "2", 2, 0, {2}, {1});
  p.Op('u');
  p.Op('}').Str("_metadata").Op('}').Str("").Op('}').Str("version").Int(1);
  p.Op('s').Op('s').Op('s').Op('b').Op('.');
  std::vector<int64_t> steps = {123456789012345};
  std::string path = WriteCheckpoint(
      p.bytes(), {{"0", F32Storage(3)}, {"1", Bytes(steps)}, {"2", std::string("\x01\x00", 2)}});
  StatusOr<TensorMap> r = LoadTorchBin(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats(r->tensors.at("p")), (std::vector<float>{0, 1, 2}));
  const HostTensor& s = r->tensors.at("steps");
  EXPECT_EQ(s.dtype, DType::kI64);
  EXPECT_TRUE(s.shape.empty());
  int64_t v = 0;
  std::memcpy(&v, s.data, 8);
  EXPECT_EQ(v, 123456789012345);
  EXPECT_EQ(r->tensors.at("mask").dtype, DType::kBool);
}

TEST_F(TorchBinTest, AcceptsProtocol4FramesMemoizeAndStackGlobal) {
  // {'w': tensor} written the way protocol 4 does it.
  std::string body;
  auto sbu = [&](std::string_view s) {
    body += '\x8c';
    body += static_cast<char>(s.size());
    body.append(s);
    body += '\x94';  // MEMOIZE
  };
  sbu("collections");
  sbu("OrderedDict");
  body += "\x93\x94)R\x94(";  // STACK_GLOBAL MEMOIZE EMPTY_TUPLE REDUCE MEMOIZE MARK
  sbu("w");
  sbu("torch._utils");
  sbu("_rebuild_tensor_v2");
  body += "\x93\x94((";
  sbu("storage");
  sbu("torch");
  sbu("HalfStorage");
  body += "\x93\x94";
  sbu("0");
  sbu("cpu");
  body += "K\x02t\x94QK\x00K\x02\x85\x94K\x01\x85\x94\x89h\x02)R\x94t\x94R\x94u."s;
  std::string pickle = "\x80\x04\x95";
  for (int i = 0; i < 8; ++i) pickle += static_cast<char>((body.size() >> (8 * i)) & 0xff);
  pickle += body;
  std::vector<uint16_t> half = {FloatToHalf(1.0f), FloatToHalf(2.0f)};
  std::string path = WriteCheckpoint(pickle, {{"0", Bytes(half)}});
  StatusOr<TensorMap> r = LoadTorchBin(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const HostTensor& w = r->tensors.at("w");
  EXPECT_EQ(w.dtype, DType::kF16);
  EXPECT_EQ(HalfToFloat(reinterpret_cast<const uint16_t*>(w.data)[1]), 2.0f);
}

TEST_F(TorchBinTest, RejectsFileThatIsNotAZip) {
  std::string path = (dir_ / "legacy.bin").string();
  std::ofstream(path, std::ios::binary) << "\x80\x02\x8a\x0alegacy torch pickle";
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a zip archive"), std::string::npos) << msg;
  EXPECT_NE(msg.find("legacy"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsMissingFileNamingIt) {
  std::string path = (dir_ / "absent.bin").string();
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsTruncatedZipNamingTheFile) {
  std::string path = WriteCheckpoint(
      StateDictPickle({{"w", "FloatStorage", "0", 64, 0, {64}, {1}}}), {{"0", F32Storage(64)}});
  fs::resize_file(path, fs::file_size(path) / 2);
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsZipWithoutDataPkl) {
  std::string path = WriteZip("nopkl.bin", {{"archive/data/0", F32Storage(2)}});
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("data.pkl"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsBigEndianByteorder) {
  std::string path = WriteZip(
      "be.bin", {{"archive/data.pkl", StateDictPickle({})}, {"archive/byteorder", "big"}});
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find("byteorder"), std::string::npos) << msg;
  EXPECT_NE(msg.find("big"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsUnsupportedOpcodeNamingOpcodeAndOffset) {
  // '\x8f' (EMPTY_SET) right after the PROTO header, at offset 2.
  std::string path = WriteCheckpoint("\x80\x02\x8f.", {});
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("unsupported pickle opcode 0x8f at offset 2"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsDisallowedGlobalNamingIt) {
  PickleBuilder p;
  p.Raw("\x80\x02").Global("os", "system").Str("echo pwned").Op('\x85').Op('R').Op('.');
  std::string msg = ErrorOf(WriteCheckpoint(p.bytes(), {}));
  EXPECT_NE(msg.find("'os.system'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not allowed"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsStorageKeyMissingFromArchiveNamingKeyAndTensor) {
  std::string path = WriteCheckpoint(
      StateDictPickle({{"layer.weight", "FloatStorage", "7", 2, 0, {2}, {1}}}),
      {{"0", F32Storage(2)}});
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("'layer.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("storage key '7'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsStorageSmallerThanNumelTimesItemsize) {
  std::string path = WriteCheckpoint(
      StateDictPickle({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}}), {{"0", F32Storage(5)}});
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find("storage key '0'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("20 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("24"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsViewOutOfStorageBoundsNamingTensor) {
  // Offset 2 + 2x3 contiguous needs 8 elements; the storage has 6.
  std::string path = WriteCheckpoint(
      StateDictPickle({{"proj.weight", "FloatStorage", "0", 6, 2, {2, 3}, {3, 1}}}),
      {{"0", F32Storage(6)}});
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("'proj.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reaches past the end"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsStridesWhoseReachOverflows) {
  std::string path = WriteCheckpoint(
      StateDictPickle({{"huge", "FloatStorage", "0", 6, 0, {3, 2}, {INT64_MAX / 2, 1}}}),
      {{"0", F32Storage(6)}});
  std::string msg = ErrorOf(path);
  EXPECT_NE(msg.find("'huge'"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsTruncatedPickleAtEveryLength) {
  std::string pickle = StateDictPickle({{"w", "FloatStorage", "0", 2, 0, {2}, {1}}});
  for (size_t len = 0; len < pickle.size(); ++len) {
    std::string path = WriteCheckpoint(pickle.substr(0, len), {{"0", F32Storage(2)}});
    StatusOr<TensorMap> r = LoadTorchBin(path);
    ASSERT_FALSE(r.ok()) << "prefix of length " << len << " loaded";
    EXPECT_NE(r.status().message().find(path), std::string::npos);
  }
  // Cut inside the BINUNICODE length of the first key (offset 6).
  std::string msg = ErrorOf(WriteCheckpoint(pickle.substr(0, 8), {}));
  EXPECT_NE(msg.find("truncated data.pkl at offset 6"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsNonStringKey) {
  PickleBuilder p;
  p.Raw("\x80\x02").Op('}').Op('(').Int(5).Tensor("FloatStorage", "0", 2, 0, {2}, {1});
  p.Op('u').Op('.');
  std::string msg = ErrorOf(WriteCheckpoint(p.bytes(), {{"0", F32Storage(2)}}));
  EXPECT_NE(msg.find("key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a str"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsNonTensorValueNamingKey) {
  PickleBuilder p;
  p.Raw("\x80\x02").Op('}').Op('(').Str("epoch").Int(3).Op('u').Op('.');
  std::string msg = ErrorOf(WriteCheckpoint(p.bytes(), {}));
  EXPECT_NE(msg.find("'epoch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a tensor"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, RejectsPickleWhoseRootIsNotADict) {
  std::string msg = ErrorOf(WriteCheckpoint("\x80\x02]q\x00."s, {}));
  EXPECT_NE(msg.find("not a state dict"), std::string::npos) << msg;
}

TEST_F(TorchBinTest, CorruptedPicklesNeverCrash) {
  const std::string good = StateDictPickle({
      {"a", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}},
      {"b", "FloatStorage", "0", 6, 1, {2, 2}, {1, 2}},
  });
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 300; ++iter) {
    std::string bad = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      bad[rng() % bad.size()] = static_cast<char>(rng() & 0xff);
    }
    std::string path = WriteCheckpoint(bad, {{"0", F32Storage(6)}});
    StatusOr<TensorMap> r = LoadTorchBin(path);  // must not crash or read out of bounds
    if (r.ok()) {
      for (const auto& [name, t] : r->tensors) {
        EXPECT_EQ(t.bytes, static_cast<size_t>(t.numel()) * DTypeSize(t.dtype)) << name;
      }
    }
  }
}

}  // namespace
}  // namespace tierscope
