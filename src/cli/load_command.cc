// `tierscope load`: the load generator for `tierscope serve` (a client of it).
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "core/paths.h"
#include "loadgen/load_gen.h"

namespace tierscope::cli {
namespace {

// " (the most frequent error: 422, 100 times: {...})" from a load report's error counts and
// samples, on one line and clipped; "" when it recorded none.
std::string MostFrequentError(const nlohmann::json& report) {
  const auto errors = report.find("errors");
  if (errors == report.end() || !errors->is_object()) return "";
  std::string kind;
  int64_t most = 0;
  for (auto it = errors->begin(); it != errors->end(); ++it) {
    if (it->is_number_integer() && it->get<int64_t>() > most) kind = it.key(), most = it->get<int64_t>();
  }
  if (most == 0) return "";
  std::string sample;
  if (const auto samples = report.find("error_samples"); samples != report.end() && samples->contains(kind) &&
                                                         (*samples)[kind].is_string()) {
    sample = (*samples)[kind].get<std::string>();
  }
  for (char& c : sample) c = (c == '\n' || c == '\r') ? ' ' : c;
  if (sample.size() > 200) sample = sample.substr(0, 200) + "...";
  return " (the most frequent error: " + kind + ", " + std::to_string(most) + " times" +
         (sample.empty() ? "" : ": " + sample) + ")";
}

}  // namespace

void RegisterLoad(CLI::App& app, std::vector<Command>* out) {
  auto load = std::make_shared<LoadOptions>();
  auto json = std::make_shared<std::string>();
  auto* ld = app.add_subcommand(
      "load", "Load generator for tierscope serve: open-loop Poisson or closed-loop clients; "
              "latency percentiles, errors and the server's batch sizes");
  ld->add_option("--url", load->url, "server URL (loopback unless --allow-remote)")->capture_default_str();
  ld->add_option("--endpoint", load->endpoint, "embed | infer (KServe v2)")->capture_default_str();
  ld->add_option("--model", load->model_name, "infer: the model name (default: the server's /info)");
  ld->add_option("--outputs", load->infer_outputs, "infer: output names, comma-separated")
      ->capture_default_str();
  ld->add_option("--mode", load->mode, "open (Poisson arrivals at --rate) | closed (--concurrency clients)")
      ->capture_default_str();
  ld->add_option("--rate", load->rate, "open loop: requests per second")->capture_default_str();
  ld->add_option("--concurrency", load->concurrency, "closed loop: clients")->capture_default_str();
  ld->add_option("--duration", load->duration_s, "seconds of load")->capture_default_str();
  ld->add_option("--warmup", load->warmup_s, "first seconds not counted")->capture_default_str();
  ld->add_option("--lengths", load->lengths,
                 "tokens per input with [CLS]/[SEP]: fixed:N | uniform:A-B | choice:A,B,C")
      ->capture_default_str();
  ld->add_option("--inputs-per-request", load->inputs_per_request, "inputs in each request")
      ->capture_default_str();
  ld->add_option("--max-connections", load->max_connections, "open loop: connections at most")
      ->capture_default_str();
  ld->add_option("--timeout", load->timeout_s, "seconds per request and for stragglers")
      ->capture_default_str();
  ld->add_option("--seed", load->seed, "arrival and text seed")->capture_default_str()->check(Seed());
  ld->add_flag("--allow-remote", load->allow_remote, "allow a non-loopback server");
  ld->add_option("--json", *json, "also write the report as JSON to this file");
  out->push_back({ld, [load, json] {
                    auto report = RunLoad(*load);
                    if (!report.ok()) return Fail(report.status());
                    if (!json->empty()) {
                      Status written = WriteFileAtomic(*json, report->dump(2) + "\n");
                      if (!written.ok()) return Fail(written);
                    }
                    std::cout << FormatLoadReport(*report);
                    if ((*report)["ok"].get<int64_t>() == 0) {
                      std::cerr << "tierscope: error: no request succeeded" << MostFrequentError(*report) << "\n";
                      return 1;
                    }
                    return 0;
                  }});
}

}  // namespace tierscope::cli
