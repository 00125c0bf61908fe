#include "webui.h"

namespace cria::server {

namespace {
// The page is one self-contained file (HTML, CSS and vanilla JS, no build
// step), kept as a raw string literal so the compiler tracks it as a header.
constexpr char kIndexHtml[] =
#include "webui/index.html.inc"
    ;
}  // namespace

std::string_view webui_index_html() { return {kIndexHtml, sizeof kIndexHtml - 1}; }

}  // namespace cria::server
