// `trainsim serve`: the web app and its JSON API on cpp-httplib (Debian libcpp-httplib-dev, found
// with pkg-config). Requests are answered by handle_api (cli/web_api.h), which never throws.
#include <cstdio>
#include <string>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "core/error.h"
#include "cli/web_api.h"

#ifdef TRAINSIM_WITH_HTTPLIB
#include <httplib.h>
#endif

namespace trainsim::cli {

int cmd_serve(const Args& args) {
  CLI::App app("Serve the web app: pick presets or paste a Hugging Face config / Megatron-LM command line, edit "
               "any field and see the prediction, its plots and the search update as you type. "
               "JSON API: GET or POST /api/perf returns what perf --json returns.",
               "trainsim serve");
  std::string host = "127.0.0.1";
  int port = 8080;
  app.add_option("--host", host, "address to bind (default 127.0.0.1: this machine only)");
  app.add_option("--port", port, "TCP port (default 8080; 0 picks a free port)");
  if (!parse_args(app, "serve", args)) return 0;
  if (port < 0 || port > 65535)
    throw UsageError("serve: --port: expected 0..65535 (0 picks a free port), got " + std::to_string(port));
#ifndef TRAINSIM_WITH_HTTPLIB
  throw Error("serve: this trainsim was built without cpp-httplib; install libcpp-httplib-dev (make setup) and rebuild");
#else
  httplib::Server server;
  server.set_payload_max_length(size_t{8} << 20);
  const auto api = [](const httplib::Request& q, httplib::Response& r) {
    ApiRequest a;
    a.method = q.method;
    a.path = q.path;
    for (const auto& [k, v] : q.params) a.params.emplace_back(k, v);
    a.body = q.body;
    const ApiResponse res = handle_api(a);
    r.status = res.status;
    r.set_content(res.body, res.content_type.c_str());
  };
  server.Get("/", [](const httplib::Request&, httplib::Response& r) {
    r.set_content(web_app_page(), "text/html; charset=utf-8");
  });
  server.Get("/api/.*", api);
  server.Post("/api/.*", api);
  // handle_api catches everything; this guards the adapter itself, so no request stops the server.
  server.set_exception_handler([](const httplib::Request&, httplib::Response& r, std::exception_ptr) {
    r.status = 500;
    r.set_content("{\"error\": \"internal error\", \"field\": \"\"}\n", "application/json");
  });
  const int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) throw Error("serve: cannot listen on " + host + ":" + std::to_string(port) + " (in use, or not a local address?)");
  std::printf("trainsim serve: listening on http://%s:%d/ (Ctrl-C stops)\n", host.c_str(), bound);
  std::fflush(stdout);
  if (!server.listen_after_bind()) throw Error("serve: the server stopped unexpectedly");
  return 0;
#endif
}

}  // namespace trainsim::cli
