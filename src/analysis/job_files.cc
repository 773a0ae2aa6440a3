// Finding a job's trace files, assigning ranks, and reading them in parallel within a
// memory budget.
#include "analysis/job_files.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "analysis/commands.h"
#include "core/cpu_info.h"
#include "core/exceptions.h"
#include "trace/json_input.h"

namespace tierscope {
namespace {

namespace fs = std::filesystem;

bool IsTraceFile(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".sqlite");
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Order "report_2" before "report_10": runs of digits compare as numbers.
bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

StatusOr<std::vector<std::string>> JobFiles(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) return NotFound(in + ": no such file or directory");
    if (!fs::is_directory(st)) {
      files.push_back(in);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(in, ec)) {
      if (entry.is_regular_file() && IsTraceFile(entry.path().filename().string())) {
        found.push_back(entry.path().string());
      }
    }
    if (ec) return FailedPrecondition(in + ": cannot list: " + ec.message());
    if (found.empty()) {
      return InvalidArgument(in + ": no trace files in it (*.json, *.json.gz, *.sqlite)");
    }
    std::sort(found.begin(), found.end(),
              [](const std::string& a, const std::string& b) { return NaturalLess(BaseName(a), BaseName(b)); });
    files.insert(files.end(), found.begin(), found.end());
  }
  if (files.empty()) return InvalidArgument("no trace files given");
  return files;
}

int RankFromFileName(std::string_view path) {
  const std::string_view name = BaseName(path);
  for (size_t i = 0; i + 4 < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(name[i])) != 'r' ||
        std::tolower(static_cast<unsigned char>(name[i + 1])) != 'a' ||
        std::tolower(static_cast<unsigned char>(name[i + 2])) != 'n' ||
        std::tolower(static_cast<unsigned char>(name[i + 3])) != 'k') {
      continue;
    }
    size_t j = i + 4;
    if (j < name.size() && (name[j] == '-' || name[j] == '_')) ++j;
    int64_t rank = -1;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j])) && rank < (1 << 24)) {
      rank = (rank < 0 ? 0 : rank * 10) + (name[j] - '0');
      ++j;
    }
    if (rank >= 0 && rank < (1 << 24)) return static_cast<int>(rank);
  }
  return -1;
}

int NumberInFileName(std::string_view path) {
  std::string_view stem = BaseName(path);
  stem = stem.substr(0, stem.find('.'));
  size_t end = stem.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(stem[end - 1]))) --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(stem[begin - 1]))) --begin;
  if (begin == end || end - begin > 7) return -1;
  int n = 0;
  for (size_t k = begin; k < end; ++k) n = n * 10 + (stem[k] - '0');
  return n;
}

LoadPlan PlanLoad(const std::vector<int64_t>& rank_bytes, int threads, int64_t available_bytes) {
  LoadPlan p;
  for (int64_t b : rank_bytes) p.largest_bytes = std::max(p.largest_bytes, b);
  const int n = static_cast<int>(rank_bytes.size());
  p.in_flight = std::max(1, std::min(threads, n));
  p.why = std::to_string(p.in_flight) + (p.in_flight == 1 ? " thread" : " threads");
  p.budget_bytes = available_bytes;
  if (available_bytes > 0 && p.largest_bytes > 0) {
    // A rank's trace and its index take about 1.5x its JSON (bench/ingest_bench.sh).
    const int64_t per_rank = p.largest_bytes + p.largest_bytes / 2;
    const int64_t fit = std::max<int64_t>(1, (available_bytes * 8 / 10) / per_rank);
    if (fit < p.in_flight) {
      p.in_flight = static_cast<int>(fit);
      p.why = "memory for " + std::to_string(fit) + (fit == 1 ? " rank" : " ranks") + " of " +
              FormatBytes(static_cast<double>(p.largest_bytes)) + " at once (" +
              FormatBytes(static_cast<double>(available_bytes)) + " available)";
    }
  }
  return p;
}

Status ForEachRankTrace(const std::vector<std::string>& files, const LoadPlan& plan,
                        const std::function<Status(size_t, Trace&)>& reduce,
                        const std::function<void(size_t, size_t, const std::string&)>& progress) {
#if defined(__GLIBC__)
  // Large blocks (a rank's events, strings, input) straight from the system and back to
  // it when freed: glibc would otherwise raise its mmap threshold after the first rank and
  // keep later ranks' blocks in its arenas.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  size_t done = 0;
  Status first_error;
  size_t first_error_index = files.size();
  const auto work = [&] {
    while (!stop.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= files.size()) return;
      Status s;
      try {
        StatusOr<Trace> t = LoadTrace(files[i]);
        if (t.ok()) {
          s = reduce(i, *t);
        } else {
          s = t.status();
        }
      } catch (...) {
        s = StatusFromCurrentException(files[i]);
      }
#if defined(__GLIBC__)
      // The trace is gone: hand its pages back now, or the allocator keeps them for the
      // next rank in another arena and the job's peak grows with every rank.
      malloc_trim(0);
#endif
      std::lock_guard<std::mutex> lock(mu);
      if (!s.ok()) {
        if (i < first_error_index) {
          first_error = s;
          first_error_index = i;
        }
        stop.store(true);
        return;
      }
      ++done;
      if (progress) progress(done, files.size(), files[i]);
    }
  };
  std::vector<std::jthread> workers;
  for (int w = 1; w < plan.in_flight; ++w) {
    try {
      workers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // fewer threads: the rest still runs on this one
    }
  }
  work();
  workers.clear();  // joins
  return first_error;
}

StatusOr<RankAssignment> AssignRanks(const std::vector<std::string>& files,
                                     const std::vector<int>& trace_ranks) {
  RankAssignment a;
  a.rank.resize(files.size());
  a.from.resize(files.size());
  // One source for the whole job: distributedInfo when every trace has it, else file
  // names when every name has one, else the order of the files.
  const bool all_info = std::all_of(trace_ranks.begin(), trace_ranks.end(), [](int r) { return r >= 0; });
  bool all_names = true;
  for (const std::string& f : files) all_names = all_names && RankFromFileName(f) >= 0;
  // nsys -o report_%q{RANK} names files report_0 ... report_N-1: a number in every name,
  // trusted only when the numbers are exactly 0..N-1 (not pids or timestamps).
  std::vector<int> numbers;
  for (const std::string& f : files) numbers.push_back(NumberInFileName(f));
  std::vector<int> sorted_numbers = numbers;
  std::sort(sorted_numbers.begin(), sorted_numbers.end());
  bool numbered = !files.empty();
  for (size_t i = 0; i < sorted_numbers.size(); ++i) numbered = numbered && sorted_numbers[i] == static_cast<int>(i);
  for (size_t i = 0; i < files.size(); ++i) {
    if (all_info) {
      a.rank[i] = trace_ranks[i];
      a.from[i] = "distributedInfo";
    } else if (all_names) {
      a.rank[i] = RankFromFileName(files[i]);
      a.from[i] = "file name";
    } else if (numbered) {
      a.rank[i] = numbers[i];
      a.from[i] = "number in the file name";
    } else {
      a.rank[i] = static_cast<int>(i);
      a.from[i] = "order";
    }
  }
  const auto with_info = std::count_if(trace_ranks.begin(), trace_ranks.end(), [](int r) { return r >= 0; });
  if (!all_info && with_info > 0) {
    a.note = "distributedInfo names a rank in " + std::to_string(with_info) + " of " + std::to_string(files.size()) +
             " traces only: every rank is numbered by " + a.from.front() + " instead";
  }
  std::map<int, size_t> seen;
  for (size_t i = 0; i < files.size(); ++i) {
    auto [it, fresh] = seen.emplace(a.rank[i], i);
    if (!fresh) {
      return InvalidArgument("two traces are rank " + std::to_string(a.rank[i]) + " (by " + a.from[i] +
                             "): " + files[it->second] + " and " + files[i]);
    }
  }
  return a;
}

}  // namespace tierscope
