// The terminal chat, fed from a string: replies, /clear, /exit.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "cria/core/error.h"
#include "cria/server/interactive_chat.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {
InteractiveChatOptions stories_options() {
    InteractiveChatOptions o;
    o.model_path = cria::test::model_path("stories260K/stories260K.gguf").string();
    o.n_ctx = 1024;
    o.n_threads = 2;
    o.max_tokens = 16;
    o.sampling.temp = 0.0f;
    return o;
}

std::string chat(const std::string& input, const InteractiveChatOptions& o = stories_options()) {
    std::istringstream in(input);
    std::ostringstream out;
    EXPECT_EQ(run_interactive_chat(o, in, out), 0);
    return out.str();
}

// A reply without the line break (and markers) the chat writes after it,
// and without the trailing space a JSON grammar allows.
std::string text_of(const std::string& reply) {
    std::string text = reply.substr(0, reply.find('\n'));
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text;
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

// /image PATH (with a projector: stories260K and the tiny gemma3 one in
// tests/data) attaches the image to the next message, whose reply then
// differs from the same text alone; the image stays in the history. Without
// a projector, or for a bad file, /image says why and the chat goes on.
TEST(InteractiveChat, ImageAttachesAnImageToTheNextMessage) {
    InteractiveChatOptions o = stories_options();
    o.mmproj = cria::test::data_path("mmproj/tiny-gemma3-w64.gguf").string();
    const std::string image = cria::test::data_path("mmproj/img-a-96x64.png").string();
    const std::string t = chat("Once upon a time\n/clear\n/image " + image + "\nOnce upon a time\nThe end\n/image " +
                                   image + ".missing\n/exit\n",
                               o);
    const auto r = replies(t);
    ASSERT_GE(r.size(), 6u) << t;
    EXPECT_NE(r[2].find("4 image tokens, for the next message"), std::string::npos) << r[2];
    EXPECT_EQ(r[3].find("error"), std::string::npos) << r[3];
    EXPECT_NE(r[3], r[0]);  // the image changed the reply
    EXPECT_EQ(r[4].find("error"), std::string::npos) << r[4];  // the image is still in the history
    EXPECT_NE(r[5].find("error: cannot open"), std::string::npos) << r[5];
    const std::string none = chat("/image " + image + "\nOnce upon a time\n/exit\n");
    EXPECT_NE(none.find("error: /image needs a vision projector"), std::string::npos) << none;
    EXPECT_EQ(replies(none)[1], replies(t)[0]);  // the chat went on, without an image
}

TEST(InteractiveChat, HistoryChangesTheNextReply) {
    const auto with_history = replies(chat("Once upon a time\nOnce upon a time\n"));
    ASSERT_GE(with_history.size(), 2u);
    // The second turn sees the first one, so its prompt (and greedy reply) differ.
    EXPECT_NE(with_history[1], with_history[0]);
}

// `cria run` without -p passes its grammar flags here: every reply follows them.
TEST(InteractiveChat, AGrammarConstrainsEveryReply) {
    InteractiveChatOptions o = stories_options();
    o.sampling.temp = 0.8f;
    o.sampling.seed = 1;
    o.grammar.grammar = R"(root ::= ("yes" | "no") ".")";
    const auto r = replies(chat("Once upon a time\nWhat did she say?\n", o));
    ASSERT_GE(r.size(), 2u);  // then the prompt that meets the end of input
    for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(std::regex_match(text_of(r[i]), std::regex("(yes|no)\\."))) << r[i];
}

TEST(InteractiveChat, AJsonSchemaConstrainsEveryReply) {
    InteractiveChatOptions o = stories_options();
    o.grammar.json_schema = R"({"type": "boolean"})";
    const auto r = replies(chat("Is it true?\nAnd now?\n", o));
    ASSERT_GE(r.size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(std::regex_match(text_of(r[i]), std::regex("true|false"))) << r[i];
}

TEST(InteractiveChat, ABadGrammarEndsTheChatBeforeTheFirstPrompt) {
    InteractiveChatOptions o = stories_options();
    o.grammar.grammar = "root ::= (";
    std::istringstream in("Hello\n");
    std::ostringstream out;
    EXPECT_THROW(run_interactive_chat(o, in, out), cria::Error);
    EXPECT_EQ(out.str().find("> "), std::string::npos);
}

// -b, -ub, -ctk, -ctv, --load-mode and --no-repack reach the model and the
// context, and the banner shows them in effect.
TEST(InteractiveChat, CacheBatchAndLoadSettingsAreHonoured) {
    InteractiveChatOptions o = stories_options();
    o.backend.n_batch = 64;
    o.backend.n_ubatch = 16;
    o.backend.type_k = cria::ElementType::F32;  // stories260K's heads (8 values) are too short for q8_0 blocks
    o.backend.type_v = cria::ElementType::BF16;
    o.backend.load_mode = cria::gguf::LoadMode::None;
    o.backend.repack = false;
    const std::string t = chat("Once upon a time\n", o);
    EXPECT_NE(t.find("batch 64/16, KV cache f32/bf16, loaded with none, 0.0 MiB of weights packed (--no-repack)"),
              std::string::npos)
        << t;
    const auto r = replies(t);
    ASSERT_GE(r.size(), 1u);
    EXPECT_FALSE(text_of(r[0]).empty());
}

TEST(InteractiveChat, TheDefaultsAreTheRuntimes) {
    const std::string t = chat("");
    EXPECT_NE(t.find("batch 512/512, KV cache f16/f16, loaded with "), std::string::npos) << t;
    EXPECT_EQ(t.find("--no-repack"), std::string::npos);
}
