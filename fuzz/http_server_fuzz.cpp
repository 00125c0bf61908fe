// libFuzzer target: the HTTP layer, from raw bytes to the routes' answers.
// Input: bytes read as one kept-alive connection (any number of requests)
// by the server of `cria serve` (keyless, on loopback, metrics on) over a
// stub backend (tests/server/stub_backend.h: the stories260K vocabulary,
// instant made-up logits). cpp-httplib's request parser, the checks before
// routing and every route's handler see them; nothing may crash, hang or
// answer 5xx for something the request did (500 is an internal error: the
// target aborts on it).
//
// Run (from the repository root; the corpus is kept small and minimized):
//   build-fuzz/fuzz/http_server_fuzz -dict=fuzz/http.dict -max_len=4096 -timeout=20 \
//       build-fuzz/corpus-http fuzz/corpus/http
// Crash inputs go to tests/data/http/regressions/; tests/server/http_replay_test.cpp
// replays them and the corpus.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/http_fuzz_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static auto server = cria::test::make_http_fuzz_server(CRIA_FUZZ_MODEL);
    const auto exchange = server->serve_bytes(std::string_view(reinterpret_cast<const char*>(data), size));
    for (int status : exchange.statuses) {
        if (status == 500) {  // the server failed on its own
            std::fprintf(stderr, "500 answered:\n%s\n", exchange.reply.substr(0, 2000).c_str());
            std::abort();
        }
    }
    return 0;
}
