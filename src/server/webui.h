#pragma once
// The chat page served at GET / (src/server/webui/index.html.inc, compiled in).
#include <string_view>

namespace cria::server {

std::string_view webui_index_html();

}  // namespace cria::server
