// JSON input: a plain file past 4 GiB refused from its size (quickly, in little memory),
// gzip whose trailer under- or mis-states the size decompressed whole and exactly, and
// gzip members after the first.
#include "trace/json_input.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <random>
#include <string>

#include "test_util.h"
#include "trace/kineto_import.h"
#include "trace/kineto_stream.h"

namespace tierscope {
namespace {

using ::tierscope::testing::Contains;
using ::tierscope::testing::ReadBytes;
using ::tierscope::testing::TempDir;
using ::tierscope::testing::WriteBytes;

// One gzip member of `bytes` (level 9), appended to `path`.
void AppendGzipMember(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "ab9");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

// `n` events with distinct names and timestamps; `random_args` adds bytes that do not
// compress, else the events differ only in their numbers and compress ~100x.
std::string Events(int first, int n, bool random_args) {
  std::mt19937 rng(first);
  std::string out;
  for (int i = first; i < first + n; ++i) {
    out += "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op" + std::to_string(i) +
           "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(i) + ".125, \"dur\": 1";
    if (random_args) {
      out += ", \"args\": {\"noise\": \"";
      for (int k = 0; k < 48; ++k) out += static_cast<char>('a' + rng() % 26);
      out += "\"}";
    }
    out += "},\n";
  }
  return out;
}

// A metadata entry of `mb` MiB of spaces (it compresses ~1000x), then ",\n".
std::string Padding(int mb) {
  return "{\"ph\": \"M\", \"name\": \"pad\", \"args\": {\"name\": \"" +
         std::string(size_t(mb) << 20, ' ') + "\"}},\n";
}

void ExpectEvents(const std::string& path, int n) {
  auto t = ImportKinetoTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(static_cast<int>(t->events.size()), n);
  for (int i : {0, n / 2, n - 1}) {
    EXPECT_EQ(t->strings.Get(t->events[i].name), "op" + std::to_string(i));
    EXPECT_EQ(t->events[i].ts_ns, int64_t{i} * 1000 + 125);
  }
}

// The trailer says the last member's size, plausible for the file but far short of the
// whole: the first guess is short, and the rest must still arrive, in order, once.
TEST(JsonInput, GzipLargerThanItsTrailerSaysIsReadWhole) {
  TempDir dir;
  const std::string path = dir.file("multi.json.gz");
  const int n1 = 2000, n2 = 3000;
  std::string head = "{\"traceEvents\": [\n" + Events(0, n1, false) + Padding(20);
  std::string tail = Events(n1, n2, true);
  tail.resize(tail.size() - 2);  // the last ",\n"
  tail += "\n]}\n";
  AppendGzipMember(path, head);
  AppendGzipMember(path, tail);
  const std::string gz = ReadBytes(path);
  const size_t isize = static_cast<unsigned char>(gz[gz.size() - 4]) |
                       static_cast<unsigned char>(gz[gz.size() - 3]) << 8 |
                       static_cast<unsigned char>(gz[gz.size() - 2]) << 16;
  ASSERT_EQ(isize, tail.size());
  ASSERT_GE(isize, gz.size() / 2) << "the trailer must look plausible for this test";
  ASSERT_LT(isize * 10, head.size() + tail.size());

  auto buf = ReadJsonInput(path);
  ASSERT_TRUE(buf.ok()) << buf.status().ToString();
  ASSERT_EQ(buf->size(), head.size() + tail.size());
  EXPECT_TRUE(std::string(buf->data(), buf->size()) == head + tail);
  ExpectEvents(path, n1 + n2);
}

// Bytes after the last member: zeros (padding) pass without a word, as gzip and Python's
// gzip pass them; anything else is ignored, as gzip ignores it, and said: read whole (by
// libdeflate when what ends the file still reads as a plausible trailer, else by zlib) and
// streamed, with the same events; after one member or two, and past the 256 KiB the
// readers take at a time.
TEST(JsonInput, BytesAfterTheLastGzipMemberAreIgnoredAndSaidUnlessZeros) {
  TempDir dir;
  const int n = 500;
  std::string json = "{\"traceEvents\": [\n" + Events(0, n, true);
  json.resize(json.size() - 2);
  json += "\n]}\n";
  const std::string path = dir.file("t.json.gz");
  AppendGzipMember(path, json);
  const std::string one = ReadBytes(path);
  WriteBytes(path, "");
  AppendGzipMember(path, json.substr(0, json.size() / 2));
  AppendGzipMember(path, json.substr(json.size() / 2));
  const std::string two = ReadBytes(path);
  const std::string trailer = one.substr(one.size() - 4);  // a plausible size: libdeflate reads it
  const std::string big = std::string(size_t{300} << 10, '\0') + "x";
  const struct {
    std::string tail, note;
  } cases[] = {
      {"", ""},
      {std::string(4096, '\0'), ""},
      {std::string(size_t{300} << 10, '\0'), ""},
      {"x", "ignored 1 byte after its gzip data that is not a gzip member"},
      {"garbage\n", "ignored 8 bytes after its gzip data that are not a gzip member"},
      {"junk" + trailer, "ignored 8 bytes after its gzip data that are not a gzip member"},
      {std::string(3, '\0') + "\x1f", "ignored 4 bytes after its gzip data that are not a gzip member"},
      {big, "ignored " + std::to_string(big.size()) + " bytes after its gzip data that are not a gzip member"},
  };
  for (const std::string& gz : {one, two}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(std::to_string(c.tail.size()) + " bytes after " + (gz == one ? "one member" : "two"));
      WriteBytes(path, gz + c.tail);
      std::string ignored = "unset";
      auto buf = ReadJsonInput(path, &ignored);
      ASSERT_TRUE(buf.ok()) << buf.status().ToString();
      EXPECT_EQ(std::string(buf->data(), buf->size()), json);
      EXPECT_EQ(ignored.substr(0, c.note.size()), c.note);
      EXPECT_EQ(ignored.empty(), c.note.empty()) << ignored;
      auto whole = ImportKinetoTrace(path);
      auto streamed = ImportKinetoStream(path, 4096, 2);
      for (const auto* t : {&whole, &streamed}) {
        ASSERT_TRUE(t->ok()) << t->status().ToString();
        EXPECT_EQ(static_cast<int>((*t)->events.size()), n);
        ASSERT_EQ((*t)->import_notes.size(), c.note.empty() ? 0u : 1u);
        if (!c.note.empty()) EXPECT_EQ((*t)->import_notes[0], ignored);
      }
    }
  }
}

// A ratio past any plausible trailer (~1000x): the trailer is ignored, the first guess (8x
// the file) is far short, and zlib grows the buffer as it streams.
TEST(JsonInput, GzipFarPastItsFirstGuessIsReadWhole) {
  TempDir dir;
  const std::string path = dir.file("sparse.json.gz");
  std::string json = "{\"traceEvents\": [\n" + Events(0, 10, false) + Padding(40);
  json.resize(json.size() - 2);
  json += "]}";
  AppendGzipMember(path, json);
  auto buf = ReadJsonInput(path);
  ASSERT_TRUE(buf.ok()) << buf.status().ToString();
  ASSERT_EQ(buf->size(), json.size());
  EXPECT_TRUE(std::string(buf->data(), buf->size()) == json);
  ExpectEvents(path, 10);
  EXPECT_EQ(EstimatedInputBytes(path), static_cast<int64_t>(ReadBytes(path).size()) * 8);
}

// What a child process that ran `fn` reported (one line), and its peak RSS.
struct ChildRun {
  std::string said;
  long peak_kb = 0;
  bool exited = false;
};

template <typename Fn>
ChildRun RunInChild(Fn fn) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::string line = fn();
    (void)!write(fds[1], line.data(), line.size());
    _exit(0);
  }
  close(fds[1]);
  ChildRun r;
  char chunk[4096];
  for (ssize_t n; (n = read(fds[0], chunk, sizeof(chunk))) > 0;) r.said.append(chunk, n);
  close(fds[0]);
  int status = 0;
  struct rusage ru{};
  EXPECT_EQ(wait4(pid, &status, 0, &ru), pid);
  r.exited = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  r.peak_kb = ru.ru_maxrss;
  return r;
}

// 4.5 GB of zeros that take no disk: refused from stat's size before any of it is read.
// Reading it first (as before) took 4.2 GB of memory and seconds.
// Past 4 GiB the whole-file reader refuses from the size, reading nothing; the importer
// streams such a file instead (kineto_stream.h): 4.5 GB of zeros is invalid at byte 0,
// found in the first window, with the memory of a window.
TEST(JsonInput, PlainFileOver4GiBIsRefusedWholeAndStreamedByTheImporter) {
  TempDir dir;
  const std::string path = dir.file("huge.json");
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, off_t{4500} << 20), 0) << "no sparse files in " << dir.path();
  close(fd);
  for (int importer = 0; importer < 2; ++importer) {
    const ChildRun r = RunInChild([&] {
      const Status s = importer == 0 ? ReadJsonInput(path).status() : ImportKinetoTrace(path).status();
      return std::to_string(static_cast<int>(s.code())) + " " + std::string(s.message());
    });
    ASSERT_TRUE(r.exited) << r.said;
    const StatusCode want = importer == 0 ? StatusCode::kResourceExhausted : StatusCode::kDataLoss;
    EXPECT_EQ(r.said.substr(0, r.said.find(' ')), std::to_string(static_cast<int>(want))) << r.said;
    EXPECT_TRUE(Contains(r.said, importer == 0 ? path + ": 4718592000 bytes of JSON, over simdjson's limit"
                                               : path + ": invalid JSON at byte 0: expected '{' or '['"))
        << r.said;
    EXPECT_LT(r.peak_kb, 200 * 1024) << "peak RSS " << r.peak_kb << " KiB";
  }
}

// A small file is read as it is, followed by simdjson's zero padding.
TEST(JsonInput, PlainFileIsReadWithItsPadding) {
  TempDir dir;
  const std::string path = dir.file("small.json");
  WriteBytes(path, "{\"traceEvents\": []}");
  auto buf = ReadJsonInput(path);
  ASSERT_TRUE(buf.ok()) << buf.status().ToString();
  EXPECT_EQ(std::string(buf->data(), buf->size()), "{\"traceEvents\": []}");
  for (size_t i = 0; i < kPadding; ++i) ASSERT_EQ(buf->data()[buf->size() + i], 0);
}

TEST(JsonInput, AMappedFileGivesBackOnlyThePagesWhollyBeforeAnOffset) {
  TempDir dir;
  const std::string path = dir.file("three_pages.json");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  WriteBytes(path, std::string(3 * page, 'a'));
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  PaddedBuffer buf;
  ASSERT_TRUE(buf.Map(fd, 3 * page));
  close(fd);
  // A private mapping: bytes written stay in this process's copy of their page until the
  // page is given back, when the file's bytes show through again.
  for (size_t at : {size_t{0}, page + 1, 2 * page + 5}) buf.data()[at] = 'X';
  buf.DropPagesBefore(page + 10);  // page 0 only: page 1 is still partly needed
  EXPECT_EQ(buf.data()[0], 'a');
  EXPECT_EQ(buf.data()[page + 1], 'X');
  EXPECT_EQ(buf.data()[2 * page + 5], 'X');
  buf.DropPagesBefore(page / 2);  // already given back: nothing
  buf.DropPagesBefore(10 * page);  // past the end: up to the last whole page
  EXPECT_EQ(buf.data()[page + 1], 'a');
  EXPECT_EQ(buf.data()[2 * page + 5], 'a');
  for (size_t i = 0; i < kPadding; ++i) ASSERT_EQ(buf.data()[3 * page + i], 0);  // the padding stays
  PaddedBuffer heap;  // heap memory is never given back under its content
  ASSERT_TRUE(heap.Reserve(2 * page));
  heap.Grow(2 * page);
  heap.data()[0] = 'X';
  heap.DropPagesBefore(2 * page);
  EXPECT_EQ(heap.data()[0], 'X');
}

// The readers' On-Demand parsing must be simdjson's SIMD kernel wherever the build targets
// AVX2 (x86-64-v3): its scalar fallback took most of a big trace's parse time until the
// trace library was built with PCLMUL, which simdjson requires besides AVX2.
TEST(JsonInput, OnDemandReadersUseTheSimdKernelOnAvx2Builds) {
#if defined(__x86_64__) && defined(__AVX2__)
  EXPECT_STREQ(OnDemandKernel(), "haswell");
#else
  EXPECT_NE(OnDemandKernel(), nullptr);
#endif
}

}  // namespace
}  // namespace tierscope
