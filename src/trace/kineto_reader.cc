// The Kineto importer's reader: one traceEvents run at a time into a Trace (see
// kineto_reader.h and kineto_import.h for the mapping).
#include "trace/kineto_reader.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <new>

#include "core/allocator.h"
#include "trace/args.h"
#include "trace/kineto_values.h"

namespace tierscope::kineto {

using simdjson::SUCCESS;

namespace {

// JSON number syntax (-?digits(.digits)?([eE][+-]?digits)?), whatever its magnitude.
bool NumberSyntax(std::string_view t) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (!digits()) return false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

// ---------------------------------------------------------------------------------------
// The readers.

EventKind KindOfCategory(std::string_view cat) {
  static constexpr std::pair<const char*, EventKind> kKinds[] = {
      {"cpu_op", EventKind::kOp},         {"operator", EventKind::kOp},
      {"kernel", EventKind::kKernel},     {"user_annotation", EventKind::kAnnotation},
      {"gpu_memcpy", EventKind::kMemcpy}, {"gpu_user_annotation", EventKind::kGpuAnnotation},
      {"memcpy", EventKind::kMemcpy},     {"gpu_memset", EventKind::kMemset},
      {"memset", EventKind::kMemset},     {"cuda_sync", EventKind::kSync},
      {"runtime", EventKind::kRuntime},   {"kernel_task", EventKind::kTask},
  };
  for (const auto& [name, kind] : kKinds) {
    if (EqualsIgnoreCase(cat, name)) return kind;
  }
  // cuda_runtime, cuda_driver, hip_runtime, privateuse1_runtime, mtia_runtime, ...
  const bool runtime = EndsWithIgnoreCase(cat, "_runtime") || EndsWithIgnoreCase(cat, "_driver");
  return runtime ? EventKind::kRuntime : EventKind::kOther;
}

bool KeepsArgs(EventKind k) {
  return k == EventKind::kOp || k == EventKind::kKernel || k == EventKind::kMemcpy ||
         k == EventKind::kMemset || k == EventKind::kSync || k == EventKind::kTask;
}

}  // namespace

void Reader::ReserveEvents(size_t n) {
  if (n <= trace_.events.capacity()) return;
  trace_.events.reserve(n);
  AdviseHugePages(trace_.events.data() + trace_.events.size(),
                  (trace_.events.capacity() - trace_.events.size()) * sizeof(Event));
}

bool Reader::Fail(error_code e) {
  if (error_ != SUCCESS) return false;
  error_ = e;
  const char* loc = nullptr;
  // Where simdjson does not say: the end of the chunk it was reading (the same byte
  // whether the input is one buffer, a window or a mapped file).
  error_offset_ = base_ != nullptr ? base_offset_ + static_cast<size_t>(chunk_end_ - base_) : size_;
  if (doc_.current_location().get(loc) == SUCCESS && loc >= base_ && loc < chunk_end_) {
    error_offset_ = base_offset_ + static_cast<size_t>(loc - base_);
  }
  return false;
}

bool Reader::Read(const std::vector<std::pair<size_t, size_t>>& chunks, size_t first,
                  size_t last, bool copy_first, size_t reserve_bytes,
                  const std::atomic<bool>& stop) {
  if (first >= last) return true;
  size_t biggest = 0;
  for (size_t c = first; c < last; ++c) {
    biggest = std::max(biggest, chunks[c].second - chunks[c].first + 2);
  }
  if (parser_->allocate(biggest) != SUCCESS) {
    error_ = simdjson::MEMALLOC;
    return false;
  }
  // Never release the bytes the previous reader's last chunk may still read as padding.
  released_ = chunks[first].first + (copy_first ? kPadding : 0);
  for (size_t c = first; c < last; ++c) {
    if (stop.load(std::memory_order_relaxed)) return true;
    const auto [b, e] = chunks[c];
    if (!ReadChunk(b, e, copy_first && c == first)) return false;
    ReleaseInput(e);
    if (c == first && reserve_bytes > e - b) {  // size the rest by the first run's density
      const double per_byte = static_cast<double>(trace_.events.size()) / double(e - b);
      ReserveEvents(static_cast<size_t>(per_byte * 1.1 * double(reserve_bytes)) + 64);
    }
  }
  return true;
}

bool Reader::ReadWindowRun(char* data, size_t size, size_t capacity, size_t offset, size_t begin, size_t end,
                           size_t total_bytes, bool copy) {
  data_ = data;
  size_ = size;
  capacity_ = capacity;
  input_offset_ = offset;
  if (parser_->capacity() < end - begin + 2 && parser_->allocate(std::max(end - begin + 2, kChunkBytes * 2)) != SUCCESS) {
    error_ = simdjson::MEMALLOC;
    return false;
  }
  if (!ReadChunk(begin, end, copy)) return false;
  if (!sized_ && total_bytes > end - begin) {  // the store sized by the first run's density
    sized_ = true;
    const double per_byte = static_cast<double>(trace_.events.size()) / double(end - begin);
    ReserveEvents(static_cast<size_t>(per_byte * 1.1 * double(total_bytes)) + 64);
  }
  return true;
}

void Reader::ReadFieldValue(std::string_view key, PaddedBuffer& value, std::string* trace_name) {
  char* const data = data_;
  const size_t size = size_, capacity = capacity_;
  data_ = value.data();
  size_ = value.size();
  capacity_ = value.capacity();
  ReadField({key, 0, value.size()}, trace_name);
  data_ = data;
  size_ = size;
  capacity_ = capacity;
}

// Parses the events in [begin, end) (after '[' or ',', up to ',' or ']') as an array: in
// place, the bytes just before and at `end` becoming brackets for the while, or a copy.
bool Reader::ReadChunk(size_t begin, size_t end, bool copy) {
  const size_t len = end - begin + 2;
  char* open = data_ + begin - 1;
  char* close = data_ + end;
  size_t capacity = capacity_ - (begin - 1);
  char saved_open = 0, saved_close = 0;
  if (copy) {
    copy_ = PaddedBuffer();
    if (!copy_.Reserve(len)) {
      error_ = simdjson::MEMALLOC;
      return false;
    }
    copy_.data()[0] = '[';
    std::memcpy(copy_.data() + 1, data_ + begin, end - begin);
    copy_.data()[len - 1] = ']';
    copy_.Grow(len);
    copy_.Finish();
    open = copy_.data();
    capacity = copy_.capacity();
  } else {
    saved_open = *open;
    saved_close = *close;
    *open = '[';
    *close = ']';
  }
  base_ = open;
  base_offset_ = begin - 1;
  chunk_end_ = open + len;
  bool ok = false;
  od::array events;
  size_t n = len;
  error_code e = parser_->iterate(open, n, capacity).get(doc_);
  if (e == simdjson::UTF8_ERROR) {  // a copy with U+FFFD for each ill-formed sequence
    if (!copy) {
      *open = saved_open;
      *close = saved_close;
      copy = true;
    }
    std::string fixed = "[";
    trace_.stats.invalid_utf8 += kineto::RepairUtf8({data_ + begin, end - begin}, &fixed);
    fixed += ']';
    n = fixed.size();
    copy_ = PaddedBuffer();
    if (!copy_.Reserve(n)) {
      error_ = simdjson::MEMALLOC;
      return false;
    }
    std::memcpy(copy_.data(), fixed.data(), n);
    copy_.Grow(n);
    copy_.Finish();
    open = copy_.data();
    base_ = open;
    chunk_end_ = open + n;  // error offsets past a repair are then approximate
    e = parser_->iterate(open, n, copy_.capacity()).get(doc_);
  }
  if (e) {
    error_ = e;
    error_offset_ = begin - 1 + kineto::LocateStage1Error(open, n, e);
  } else if (const error_code e2 = doc_.get_array().get(events)) {
    Fail(e2);
  } else {
    ok = true;
    for (auto v_or : events) {
      od::value v;
      if (const error_code e3 = v_or.get(v)) ok = Fail(e3);
      if (!ok || !(ok = ReadEvent(v))) break;
    }
    const char* rest = nullptr;  // anything after the array is an error
    if (ok && doc_.current_location().get(rest) == SUCCESS) ok = Fail(simdjson::TRAILING_CONTENT);
  }
  if (!copy) {
    *open = saved_open;
    *close = saved_close;
  }
  return ok;
}

// A top-level member other than traceEvents; unreadable ones are ignored.
void Reader::ReadField(const Layout::Field& field, std::string* trace_name) {
  od::document doc;
  if (field.key != "deviceProperties" && field.key != "baseTimeNanoseconds" &&
      field.key != "traceName" && field.key != "distributedInfo") {
    return;
  }
  if (parser_->iterate(data_ + field.begin, field.end - field.begin, capacity_ - field.begin)
          .get(doc) != SUCCESS) {
    return;
  }
  std::string_view s;
  int64_t n;
  od::array devices;
  od::object info;
  if (field.key == "baseTimeNanoseconds" && doc.get_int64().get(n) == SUCCESS) {
    trace_.base_time_ns = n;
  } else if (field.key == "traceName" && doc.get_string().get(s) == SUCCESS) {
    *trace_name = std::string(s);
  } else if (field.key == "distributedInfo" && doc.get_object().get(info) == SUCCESS) {
    for (auto field_or : info) {
      od::field f;
      if (std::move(field_or).get(f) != SUCCESS) return;
      const std::string_view key = KeyOf(f);
      od::value v = f.value();
      if (key == "rank" && GetInt(v, &n) && n >= 0 && n <= INT32_MAX) {
        trace_.rank = static_cast<int32_t>(n);
      } else if (key == "world_size" && GetInt(v, &n) && n > 0 && n <= INT32_MAX) {
        trace_.world_size = static_cast<int32_t>(n);
      } else if (key == "backend" && GetString(v, &s)) {
        trace_.collective_backend = std::string(s);
      }
    }
  } else if (field.key == "deviceProperties" && doc.get_array().get(devices) == SUCCESS) {
    for (auto dev_or : devices) {  // the first device describes the trace
      od::object obj;
      if (dev_or.get_object().get(obj) != SUCCESS) return;
      for (auto field_or : obj) {
        od::field f;
        if (std::move(field_or).get(f) != SUCCESS) return;
        const std::string_view key = KeyOf(f);
        od::value v = f.value();
        if (key == "name" && GetString(v, &s)) {
          trace_.device_name = std::string(s);
        } else if (key == "numSms" && GetInt(v, &n)) {
          trace_.device_units = static_cast<int32_t>(std::clamp<int64_t>(n, 0, INT32_MAX));
        } else if (key == "totalGlobalMem" && GetInt(v, &n)) {
          trace_.device_memory = n;
        }
      }
      return;
    }
  }
}

int32_t Reader::IdForString(std::string_view s, bool* local) {
  auto it = string_ids_.find(s);
  if (it != string_ids_.end()) {
    *local = it->second.second;
    return it->second.first;
  }
  // A trailing number names the id ("stream 7" -> 7, "25738" -> 25738).
  size_t digits = 0;
  while (digits < s.size() && s[s.size() - 1 - digits] >= '0' && s[s.size() - 1 - digits] <= '9') {
    ++digits;
  }
  int32_t id = 0;
  *local = false;
  if (digits > 0 && digits <= 9) {
    for (size_t i = s.size() - digits; i < s.size(); ++i) id = id * 10 + (s[i] - '0');
  } else {
    id = next_string_id_ > INT32_MIN ? next_string_id_-- : INT32_MIN;
    *local = !primary_;
  }
  string_ids_.emplace(std::string(s), std::make_pair(id, *local));
  if (!primary_) {
    journal_.push_back({Journaled::kStringId, *local, id, std::string(s)});
  } else if (digits != s.size()) {
    AddThreadName(id, false, s);  // a bare number names nothing
  }
  return id;
}

bool Reader::ReadId(od::value& v, int32_t* id, bool* local, std::string_view* as_string) {
  *local = false;  // a repeated key must not keep an earlier value's flag
  od::json_type t;
  std::string_view text;
  int64_t n;
  if (v.type().get(t) != SUCCESS) return false;
  if (t == od::json_type::number) {
    if (v.get_int64().get(n) == SUCCESS && n >= INT32_MIN && n <= INT32_MAX) {
      *id = static_cast<int32_t>(n);
      return true;
    }
    if (!GetNumberText(v, &text)) return false;  // huge or fractional: named by its text
  } else if (t != od::json_type::string || !GetString(v, &text)) {
    return false;
  } else {
    *as_string = text;
  }
  *id = IdForString(text, local);
  return true;
}

bool Reader::ReadArgs(od::value& v, RawEvent& ev) {
  od::json_type t;
  if (v.type().get(t) != SUCCESS || t != od::json_type::object) return true;  // ignored
  const char* begin = v.raw_json_token().data();  // the '{'
  od::object obj;
  if (const error_code e = v.get_object().get(obj)) return Fail(e);
  bool grid = false;  // noted with the text below, so a repeated "args" keeps them together
  for (auto field_or : obj) {
    // The field in place (a copy of its 16-byte iterator stalls on store forwarding).
    if (const error_code e = field_or.error()) return Fail(e);
    od::field& field = field_or.value_unsafe();
    const std::string_view key = KeyOf(field);
    od::value& fv = field.value();
    if (Is(key, "External id") || Is(key, "external id")) GetInt(fv, &ev.external_id);
    else if (Is(key, "correlation")) GetInt(fv, &ev.correlation);
    else if (Is(key, "connection_id")) GetInt(fv, &ev.connection_id);
    else if (Is(key, "Bytes") || Is(key, "bytes")) GetDouble(fv, &ev.bytes);
    else if (Is(key, "Total Allocated")) GetDouble(fv, &ev.total_allocated);
    else if (Is(key, "Addr")) GetInt(fv, &ev.addr);
    else if (Is(key, "flops")) GetDouble(fv, &ev.flops);
    else if (Is(key, "kernel correlation")) GetInt(fv, &ev.kernel_correlation);
    else if (Is(key, "tasks")) GetDouble(fv, &ev.tasks);
    else if (Is(key, "busy ns")) GetDouble(fv, &ev.busy_ns);
    else if (Is(key, "name")) GetString(fv, &ev.arg_name);
    else if (Is(key, "labels")) GetString(fv, &ev.arg_labels);
    else if (Is(key, "grid")) grid = true;
  }
  // The object's text runs from its '{' to the next structural character.
  const char* loc = nullptr;
  if (doc_.current_location().get(loc) != SUCCESS || loc <= begin || loc > chunk_end_) {
    return true;
  }
  const std::string_view text = Trim(std::string_view(begin, static_cast<size_t>(loc - begin)));
  if (text.size() >= 2 && text.front() == '{' && text.back() == '}') {
    ev.args = Trim(text.substr(1, text.size() - 2));
    ev.has_grid = grid;
  }
  return true;
}

const Reader::SeenCategory& Reader::Category(std::string_view cat) {
  for (const SeenCategory& seen : seen_categories_) {
    if (seen.count != nullptr && seen.text == cat) return seen;
  }
  const int32_t id = trace_.strings.Intern(cat);
  auto it = categories_.find(id);
  if (it == categories_.end()) it = categories_.emplace(id, std::make_pair(KindOfCategory(cat), 0)).first;
  SeenCategory& slot = seen_categories_[next_seen_category_++ % seen_categories_.size()];
  slot = {trace_.strings.Get(id), id, it->second.first, &it->second.second};
  return slot;
}

bool Reader::ReadEvent(od::value v) {
  ++trace_.stats.events_read;
  od::json_type type;
  od::object obj;
  if (v.type().get(type) != SUCCESS || type != od::json_type::object) {
    return Malformed("not an object");
  }
  if (const error_code e = v.get_object().get(obj)) return Fail(e);
  RawEvent ev;
  std::string_view tid_string;
  const auto got = [](bool ok) { return ok ? Got::kOk : Got::kBad; };
  for (auto field_or : obj) {
    // The field in place (a copy of its 16-byte iterator stalls on store forwarding).
    if (const error_code e = field_or.error()) return Fail(e);
    od::field& field = field_or.value_unsafe();
    const std::string_view key = KeyOf(field);
    od::value& fv = field.value();
    if (Is(key, "ph")) ev.got_ph = got(GetString(fv, &ev.ph));
    else if (Is(key, "ts")) ev.got_ts = got(GetNumberText(fv, &ev.ts) || GetString(fv, &ev.ts));
    else if (Is(key, "dur")) ev.got_dur = got(GetNumberText(fv, &ev.dur) || GetString(fv, &ev.dur));
    else if (Is(key, "cat")) ev.has_cat = GetString(fv, &ev.cat);
    else if (Is(key, "name")) ev.got_name = got(GetString(fv, &ev.name));
    else if (Is(key, "pid")) ev.pid_ok = ReadId(fv, &ev.pid, &ev.pid_local, &ev.pid_string);
    else if (Is(key, "tid")) ev.tid_ok = ReadId(fv, &ev.tid, &ev.tid_local, &tid_string);
    else if (Is(key, "id")) GetNumberText(fv, &ev.flow_id) || GetString(fv, &ev.flow_id);
    else if (Is(key, "args") && !ReadArgs(fv, ev)) return false;
  }

  // Every entry's category is counted, kept or not.
  int32_t cat_id = -1;
  EventKind kind = EventKind::kOther;
  if (ev.has_cat) {
    const SeenCategory& seen = Category(ev.cat);
    cat_id = seen.id;
    kind = seen.kind;
    ++*seen.count;
  } else {
    ++no_category_;
    if (ev.pid_string == "CPU functions") kind = EventKind::kOp;  // legacy autograd profiler
    if (ev.pid_string == "CUDA functions") kind = EventKind::kKernel;
  }

  if (ev.got_ph == Got::kAbsent) return Malformed("missing ph");
  if (ev.got_ph == Got::kBad || ev.ph.empty()) return Malformed("ph not a string");
  const char ph = ev.ph.size() == 1 ? ev.ph[0] : '?';
  const bool memory = (ph == 'i' || ph == 'I') && ev.got_name == Got::kOk && ev.name == "[memory]";
  if (ph != 'X' && !memory) {
    ++trace_.stats.metadata;  // metadata, flows, B/E, other instants, unknown phases
    range_begins_ += ph == 'B' ? 1 : 0;
    range_ends_ += ph == 'E' ? 1 : 0;
    if ((ph == 's' || ph == 'f') && ev.cat == "async_npu") AddFlowEnd(ev, ph == 's');
    if (ph != 'M' || ev.got_name != Got::kOk || !ev.tid_ok || !ev.pid_ok) return true;
    if (ev.name == "thread_name" && !ev.arg_name.empty()) {
      AddThreadName(ev.tid, ev.tid_local, ev.arg_name);
    }
    if (ev.name == "process_name" && !ev.arg_name.empty()) {
      AddProcessName(ev.pid, ev.pid_local, ev.arg_name);
    }
    if (ev.name == "process_labels" && ev.arg_labels == "CPU" && !host_pid_set_) {
      host_pid_ = ev.pid;
      host_pid_local_ = ev.pid_local;
      host_pid_set_ = true;
    }
    return true;
  }
  if (ev.got_name == Got::kAbsent) return Malformed("missing name");
  if (ev.got_name == Got::kBad) return Malformed("name not a string");
  if (ev.got_ts == Got::kAbsent) return Malformed("missing ts");
  if (!ev.pid_ok) return Malformed("pid not a number or string");
  if (!ev.tid_ok) return Malformed("tid not a number or string");
  Event e;
  // A number too large for int64 ns is out of range, not "not a number".
  if (ev.got_ts == Got::kBad || !kineto::MicrosToNs(ev.ts, &e.ts_ns)) {
    return Malformed(ev.got_ts != Got::kBad && NumberSyntax(ev.ts) ? "time out of range" : "ts not a number");
  }
  if (ph == 'X') {
    if (ev.got_dur == Got::kAbsent) return Malformed("missing dur");
    if (ev.got_dur == Got::kBad || !kineto::MicrosToNs(ev.dur, &e.dur_ns)) {
      return Malformed(ev.got_dur != Got::kBad && NumberSyntax(ev.dur) ? "time out of range" : "dur not a number");
    }
    if (e.dur_ns < 0) return Malformed("negative dur");
  }
  if (!TimeInRange(e.ts_ns, e.dur_ns)) return Malformed("time out of range");

  e.cat = cat_id;
  e.pid = ev.pid;
  e.tid = ev.tid;
  e.kind = memory ? EventKind::kMemory : kind;
  e.external_id = ev.external_id;
  e.correlation = ev.correlation != 0 ? ev.correlation : ev.connection_id;
  switch (e.kind) {
    case EventKind::kMemory:
      e.v0 = ev.bytes;
      e.v1 = ev.total_allocated;
      e.external_id = ev.addr;
      if (memory_name_ < 0) memory_name_ = trace_.strings.Intern("[memory]");
      break;
    case EventKind::kKernel:
      e.v0 = ev.flops;
      e.v1 = ev.bytes;
      break;
    case EventKind::kTask:
      if (ev.kernel_correlation >= 0) e.correlation = ev.kernel_correlation;
      e.v0 = ev.tasks;
      e.v1 = ev.busy_ns;
      break;
    case EventKind::kRuntime:  // the launch API family
      if (ev.name.substr(0, 3) == "hip") ++hip_;
      else if (ev.name.substr(0, 4) == "musa") ++musa_;
      else if (ev.name.substr(0, 2) == "cu") ++cuda_;
      break;
    case EventKind::kOp:
      if (!saw_op_) {
        first_op_pid_ = e.pid;
        first_op_local_ = ev.pid_local;
      }
      saw_op_ = true;
      break;
    default:
      break;
  }
  e.name = memory ? memory_name_ : trace_.strings.Intern(ev.name);
  // Args name the event's own correlation or external id, so they are nearly always
  // unique: no dedup.
  // An event without a category may be a vendor's device task (read by its process, at
  // the end): its args are kept for that.
  if (!ev.args.empty() && (KeepsArgs(e.kind) || cat_id < 0)) {
    // Kept compact (PyTorch pretty-prints lists one number per line): one line in reports.
    compact_.clear();
    CompactJsonInto(ev.args, &compact_);
    e.args = trace_.strings.Append(compact_);
    e.arg_keys = kArgKeysKnown | (ev.has_grid ? kArgHasGrid : 0);
  }
  if (ev.pid_local || ev.tid_local) fixups_.push_back({trace_.events.size(), ev.pid_local, ev.tid_local});
  trace_.events.push_back(e);
  ++trace_.stats.events_kept;
  return true;
}

void Reader::Merge(Reader& later) {
  ImportStats& stats = trace_.stats;
  const ImportStats& more = later.trace_.stats;
  stats.events_read += more.events_read;
  stats.events_kept += more.events_kept;
  stats.metadata += more.metadata;
  stats.malformed += more.malformed;
  stats.invalid_utf8 += more.invalid_utf8;
  for (const auto& [reason, n] : more.malformed_reasons) stats.malformed_reasons[reason] += n;
  range_begins_ += later.range_begins_;
  range_ends_ += later.range_ends_;
  const StringTable& theirs = later.trace_.strings;
  std::vector<int32_t> ids(theirs.size(), -1);  // their interned string ids -> ours
  const auto string_id = [&](int32_t id) {
    if (id < 0) return id;
    int32_t& ours = ids[static_cast<size_t>(id)];
    if (ours < 0) ours = trace_.strings.Intern(theirs.Get(id));
    return ours;
  };
  for (const auto& [id, info] : later.categories_) {
    auto it = categories_.try_emplace(string_id(id), info.first, 0).first;
    it->second.second += info.second;
  }
  later.categories_.clear();  // counted here now; their ids die with their table below
  later.seen_categories_ = {};
  no_category_ += later.no_category_;
  hip_ += later.hip_;
  musa_ += later.musa_;
  cuda_ += later.cuda_;

  // Replaying the journal gives their string pids/tids the ids one reader would have.
  std::vector<int32_t> local_ids;  // their local id -2 - i -> ours
  const auto pid_id = [&](int32_t id, bool local) {
    return local ? local_ids[static_cast<size_t>(-2 - static_cast<int64_t>(id))] : id;
  };
  for (const JournalEntry& j : later.journal_) {
    bool unused;
    if (j.what == Journaled::kThreadName) {
      AddThreadName(pid_id(j.id, j.local), false, j.text);
      continue;
    }
    if (j.what == Journaled::kProcessName) {
      AddProcessName(pid_id(j.id, j.local), false, j.text);
      continue;
    }
    const int32_t ours = IdForString(j.text, &unused);
    if (j.local) {
      const size_t slot = static_cast<size_t>(-2 - static_cast<int64_t>(j.id));
      if (local_ids.size() <= slot) local_ids.resize(slot + 1, 0);
      local_ids[slot] = ours;
    }
  }
  for (ascend::FlowEnd f : later.flows_) {
    f.pid = pid_id(f.pid, f.pid_local);
    f.tid = pid_id(f.tid, f.tid_local);
    f.pid_local = f.tid_local = false;
    flows_.push_back(f);
  }
  later.flows_.clear();
  if (!host_pid_set_ && later.host_pid_set_) {
    host_pid_ = pid_id(later.host_pid_, later.host_pid_local_);
    host_pid_set_ = true;
  }
  if (!saw_op_ && later.saw_op_) {
    first_op_pid_ = pid_id(later.first_op_pid_, later.first_op_local_);
    saw_op_ = true;
  }

  // Names and categories are interned again; args (appended, unique) keep their bytes.
  for (Event& e : later.trace_.events) {
    e.name = string_id(e.name);
    e.cat = string_id(e.cat);
  }
  const int32_t args_offset = trace_.strings.Adopt(std::move(later.trace_.strings));
  const size_t offset = trace_.events.size();
  if (trace_.events.capacity() < offset + later.trace_.events.size()) {  // geometric: merged once a window
    ReserveEvents(std::max(offset + later.trace_.events.size(), trace_.events.capacity() * 2));
  }
  for (Event e : later.trace_.events) {
    if (e.args >= 0) e.args += args_offset;
    trace_.events.push_back(e);
  }
  for (const Fixup& f : later.fixups_) {
    Event& e = trace_.events[offset + f.event];
    if (f.pid) e.pid = pid_id(e.pid, true);
    if (f.tid) e.tid = pid_id(e.tid, true);
  }
  // Their event store stays, emptied, for the caller to hand to the next reader.
  std::vector<Event> store = std::move(later.trace_.events);
  store.clear();
  later.trace_ = Trace();
  later.trace_.events = std::move(store);
}

void Reader::Finish(const std::string& trace_name) {
  ImportStats& stats = trace_.stats;
  for (const auto& [id, info] : categories_) {
    stats.by_category[std::string(trace_.strings.Get(id))] += info.second;
  }
  if (no_category_ > 0) stats.by_category[""] += no_category_;
  stats.range_begins = range_begins_;
  stats.open_ranges = std::max<int64_t>(0, range_begins_ - range_ends_);
  if (host_pid_set_) trace_.host_pid = host_pid_;
  else if (saw_op_) trace_.host_pid = first_op_pid_;
  if (trace_name.find("tierscope") != std::string::npos) {
    trace_.runtime = "cpu";
  } else if (hip_ > 0 && hip_ >= musa_ && hip_ >= cuda_) {
    trace_.runtime = "hip";
  } else if (musa_ > 0 && musa_ >= cuda_) {
    trace_.runtime = "musa";
  } else if (cuda_ > 0) {
    trace_.runtime = "cuda";
  }
  if (ascend::IsAscendLayout(trace_)) ascend::ApplyAscendLayout(trace_, std::move(flows_));
}

void Reader::AddFlowEnd(const RawEvent& ev, bool start) {
  ascend::FlowEnd f;
  f.start = start;
  if (!ev.pid_ok || !ev.tid_ok || ev.got_ts != Got::kOk) return;
  if (!kineto::MicrosToNs(ev.ts, &f.ts_ns)) return;
  const std::string_view id = ev.flow_id;
  if (id.empty() || std::from_chars(id.data(), id.data() + id.size(), f.id).ptr != id.data() + id.size()) return;
  f.pid = ev.pid;
  f.tid = ev.tid;
  f.pid_local = ev.pid_local;  // a secondary reader's: mapped at Merge
  f.tid_local = ev.tid_local;
  flows_.push_back(f);
}

}  // namespace tierscope::kineto
