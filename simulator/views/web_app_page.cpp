// The web app's page, a view of one request: presets or pasted documents (a Hugging Face
// config.json, a Megatron-LM command line) fill the fields with what they set, edits apply on top
// as overrides; the report section (drawn by the server, the same as perf --html) and the search
// of the same plan on the right, refreshed as the user types.
#include "cli/web_api.h"

namespace trainsim {
namespace detail {
extern const char* const kWebAppPage;  // views/web_app.html, embedded at build time
}  // namespace detail

const std::string& web_app_page() {
  static const std::string page = detail::kWebAppPage;
  return page;
}

}  // namespace trainsim
