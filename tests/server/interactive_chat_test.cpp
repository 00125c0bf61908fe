// The terminal chat, fed from a string: replies, /clear, /exit.
#include <gtest/gtest.h>

#include <sstream>

#include "cria/server/interactive_chat.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {
std::string chat(const std::string& input) {
    InteractiveChatOptions o;
    o.model_path = cria::test::model_path("stories260K/stories260K.gguf").string();
    o.n_ctx = 1024;
    o.n_threads = 2;
    o.max_tokens = 16;
    o.sampling.temp = 0.0f;
    std::istringstream in(input);
    std::ostringstream out;
    EXPECT_EQ(run_interactive_chat(o, in, out), 0);
    return out.str();
}

// The replies: what follows each "> " prompt up to the next prompt.
std::vector<std::string> replies(const std::string& transcript) {
    std::vector<std::string> r;
    size_t pos = transcript.find("\n> ");
    while (pos != std::string::npos) {
        const size_t next = transcript.find("\n> ", pos + 3);
        r.push_back(transcript.substr(pos + 3, next == std::string::npos ? std::string::npos : next - pos - 3));
        pos = next;
    }
    return r;
}
}  // namespace

TEST(InteractiveChat, RepliesClearsAndExits) {
    const std::string t = chat("Once upon a time\n/clear\nOnce upon a time\n/exit\nnever read\n");
    const auto r = replies(t);
    ASSERT_GE(r.size(), 3u) << t;
    EXPECT_FALSE(r[0].empty());
    EXPECT_NE(r[0].find("[length limit]"), std::string::npos) << r[0];
    EXPECT_EQ(r[1], "(conversation cleared)");  // a command, not a reply
    // After /clear the same message gets the same (greedy) reply: history is gone.
    EXPECT_EQ(r[2], r[0]);
    EXPECT_EQ(t.find("never read"), std::string::npos);
}

TEST(InteractiveChat, HistoryChangesTheNextReply) {
    const auto with_history = replies(chat("Once upon a time\nOnce upon a time\n"));
    ASSERT_GE(with_history.size(), 2u);
    // The second turn sees the first one, so its prompt (and greedy reply) differ.
    EXPECT_NE(with_history[1], with_history[0]);
}
