// The web app's requests, answered without any network code (cli/cmd_serve.cpp puts them on
// HTTP): predictions as `perf --json` documents, the HTML report sections, search results, presets.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainsim {

struct ApiRequest {
  std::string method;  // GET or POST
  std::string path;    // e.g. /api/perf
  std::vector<std::pair<std::string, std::string>> params;  // query parameters in order
  std::string body;
};

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

/// Answers one request; never throws. Routes:
///   GET  /api/presets                      preset names per kind
///   GET  /api/preset?kind=K&name=N         one preset document
///   GET  /api/perf?model=&strategy=&system=&set=key=value...&mfu=&compat=&hf_config=&megatron_args=
///   POST /api/perf  {"model": name or document, "strategy": ..., "system": ..., "hf_config": document,
///                    "megatron_args": "...", "set": {"key": value}, "mfu": "...", "compat": "..."}
///        → exactly `trainsim perf --json` for the same inputs
///   GET|POST /api/report (same inputs)     the HTML report section (text/html)
///        ("model" "" or null with "megatron_args": the model the command line's flags describe)
///   POST /api/resolve (same body)          {"model": document, "strategy": document, "model_source",
///                                          "strategy_source", "global_batch_size"}: the plan the
///                                          request describes, switches with no effect still on
///   POST /api/search (same body, and "gpus", "gbs", "top")   the search section of the request's own
///                                          model, system and strategy (its other switches, seq_len,
///                                          world size and global batch unless gpus / gbs replace them)
///   GET  /api/search?model=&system=&gpus=&gbs=&top=   the search section of a preset model (text/html;
///                                          top: candidates kept, default every feasible one up to kMaxKeep)
/// Bad input: status 400, {"error": message, "field": the input or key it concerns ("" if none)};
/// presets are looked up by name only (the server never reads files named in a request).
[[nodiscard]] ApiResponse handle_api(const ApiRequest& request);

/// The single-page app (HTML, CSS and its script, no external resources).
[[nodiscard]] const std::string& web_app_page();

}  // namespace trainsim
