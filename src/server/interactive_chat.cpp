// The terminal chat of `cria run` without -p. It is the server's pipeline
// with one slot and no HTTP: the same template rendering (ChatFormatter),
// the same Scheduler (prefix reuse keeps the conversation in the KV cache,
// so each turn only evaluates the new message; speculative decoding runs in
// its one slot as in the server's) and the same output parser.
#include "cria/server/interactive_chat.h"

#include <atomic>
#include <csignal>
#include <fstream>
#include <iterator>
#include <iostream>
#include <string>

#include "chat_prompt.h"
#include "cria/core/error.h"
#include "cria/media/image_encoder.h"
#include "cria/sampling/grammar.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/scheduler.h"

namespace cria::server {

namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted.store(true); }

// Ctrl-C while a reply is written stops the reply. The handler is installed
// without SA_RESTART, so Ctrl-C at the prompt interrupts the read and ends the chat.
struct InterruptGuard {
    struct sigaction old {};
    InterruptGuard() {
        struct sigaction sa {};
        sa.sa_handler = on_interrupt;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0;
        sigaction(SIGINT, &sa, &old);
    }
    ~InterruptGuard() { sigaction(SIGINT, &old, nullptr); }
};

// ", speculative decoding with draft (m.gguf), ngram-simple", or "" when off.
std::string describe_speculation(const spec::SpecParams& p) {
    if (!p.enabled()) return "";
    std::string out;
    auto add = [&](const std::string& what) { out += (out.empty() ? "" : ", ") + what; };
    bool draft = false;
    for (spec::SpecType t : p.types) {
        draft = draft || t == spec::SpecType::Draft;
        add(t == spec::SpecType::Draft ? "draft (" + p.draft_model + ")" : std::string(spec::spec_type_name(t)));
    }
    if (!draft && !p.draft_model.empty()) add("draft (" + p.draft_model + ")");
    return ", speculative decoding with " + out;
}

// Writes a reply as it comes (reasoning marked, tool calls shown) until the
// request ends; Ctrl-C cancels it. Returns the reply's content.
std::string show_reply(RequestHandle& handle, const chat::OutputParserOptions& popt, std::ostream& out) {
    chat::StreamingOutputParser parser(popt);
    std::string reply;
    bool in_reasoning = false;
    auto show = [&](const chat::OutputDelta& d) {
        if (!d.reasoning.empty()) {
            if (!in_reasoning) out << "[thinking] ";
            in_reasoning = true;
            out << d.reasoning;
        }
        if (!d.content.empty()) {
            if (in_reasoning) out << "\n[/thinking]\n";
            in_reasoning = false;
            out << d.content;
            reply += d.content;
        }
        for (const auto& call : d.tool_calls) out << "\n[tool call] " << call.name << " " << call.arguments << "\n";
        out << std::flush;
    };
    for (;;) {
        if (g_interrupted.exchange(false)) handle.cancel();
        auto ev = handle.pop(std::chrono::milliseconds(50));
        if (!ev) continue;
        if (ev->kind == GenerationEvent::Kind::Text) {
            show(parser.push(ev->text));
            continue;
        }
        if (ev->kind == GenerationEvent::Kind::Error) {
            out << "\nerror: " << ev->error << "\n";
            break;
        }
        show(parser.finish());
        if (ev->finish_reason == "cancelled") out << " [stopped]";
        else if (ev->finish_reason == "length") out << " [length limit]";
        out << "\n";
        break;
    }
    return reply;
}

}  // namespace

int run_interactive_chat(const InteractiveChatOptions& options, std::istream& in, std::ostream& out) {
    RuntimeBackendParams bp = options.backend;
    bp.n_seq = 1;
    bp.n_ctx = options.n_ctx;
    bp.n_threads = options.n_threads;
    RuntimeBackend backend(options.model_path, bp);
    const std::string tmpl = options.chat_template.empty() ? backend.chat_template() : options.chat_template;
    ChatFormatter formatter(backend.vocab(), tmpl);
    // The user's grammar, as GBNF, checked once here so that a mistake ends
    // the chat with an error instead of failing every turn.
    const std::string grammar = sampling::grammar_source(options.grammar);
    if (!grammar.empty()) (void)sampling::make_grammar_sampler(backend.vocab(), options.grammar);
    std::unique_ptr<media::ImageEncoder> encoder;
    if (!options.mmproj.empty()) {
        encoder = std::make_unique<media::ImageEncoder>(options.mmproj, options.n_threads);
        if (encoder->n_output() != static_cast<int64_t>(backend.model().hparams().n_embd))
            throw Error("the projector outputs " + std::to_string(encoder->n_output()) +
                        " values per token but the text model's width is " +
                        std::to_string(backend.model().hparams().n_embd));
        formatter.set_image_delimiters(encoder->delimiters());
    }
    // The images of the history (each where its message's marker is), and
    // those /image attached to the next message.
    std::vector<std::shared_ptr<const media::ImageChunk>> images;
    size_t n_pending = 0;
    SchedulerOptions so{.n_slots = 1, .max_queue = 1, .n_batch = backend.max_batch()};
    so.speculative = options.speculative;
    Scheduler scheduler(backend, so);
    InterruptGuard guard;

    json history = json::array();
    if (!options.system_prompt.empty()) history.push_back({{"role", "system"}, {"content", options.system_prompt}});
    out << "cria chat with " << backend.model_name() << " (" << backend.n_ctx_per_seq()
        << " tokens of context). /clear starts over, /exit quits, Ctrl-C stops a reply"
        << (encoder ? ", /image PATH attaches an image to the next message" : "") << ".\n"
        << "(" << backend.describe_settings() << (grammar.empty() ? "" : ", replies follow the grammar")
        << describe_speculation(options.speculative) << ")\n";
    std::string line;
    for (;;) {
        out << "> " << std::flush;
        g_interrupted.store(false);
        if (!std::getline(in, line)) break;  // end of input or Ctrl-C at the prompt
        if (line == "/exit" || line == "/quit") break;
        if (line == "/clear") {
            history = json::array();
            if (!options.system_prompt.empty()) history.push_back({{"role", "system"}, {"content", options.system_prompt}});
            images.clear();
            n_pending = 0;
            out << "(conversation cleared)\n";
            continue;
        }
        if (line.rfind("/image", 0) == 0 && (line.size() == 6 || line[6] == ' ')) {
            const std::string path = line.size() > 7 ? line.substr(7) : std::string();
            if (!encoder) {
                out << "error: /image needs a vision projector (--mmproj FILE)\n";
            } else if (path.empty()) {
                out << "error: /image PATH\n";
            } else {
                try {
                    std::ifstream file(path, std::ios::binary);
                    if (!file) throw Error("cannot open '" + path + "'");
                    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
                    images.push_back(encoder->encode(bytes, path));
                    ++n_pending;
                    out << "(" << path << ": " << images.back()->n_tokens << " image tokens, for the next message)\n";
                } catch (const std::exception& e) {
                    out << "error: " << e.what() << "\n";
                }
            }
            continue;
        }
        if (line.empty()) continue;
        // The attached images go first in the message, as mtmd-cli puts them.
        std::string content;
        for (size_t i = 0; i < n_pending; ++i) content += media::kDefaultMediaMarker;
        history.push_back({{"role", "user"}, {"content", content + line}});
        ChatJob job;
        job.images = images;
        job.messages = history;
        job.gen.sampling = options.sampling;
        job.gen.max_tokens = options.max_tokens;
        std::shared_ptr<RequestHandle> handle;
        chat::OutputParserOptions popt;
        try {
            popt = formatter.prepare(job);
            if (!grammar.empty()) {
                job.gen.grammar = grammar;
                job.gen.grammar_options = {};
            }
            handle = scheduler.submit(std::move(job.gen));
        } catch (const std::exception& e) {
            out << "error: " << e.what() << "\n";
            history.erase(history.end() - 1);
            images.resize(images.size() - n_pending);  // the message and its images are dropped together
            n_pending = 0;
            continue;
        }
        n_pending = 0;
        const std::string reply = show_reply(*handle, popt, out);
        history.push_back({{"role", "assistant"}, {"content", reply}});
    }
    out << "\n";
    if (options.speculative.enabled()) {
        const SchedulerStats st = scheduler.stats();
        out << "(speculative decoding: drafted " << st.spec_drafted_total << " tokens, accepted "
            << st.spec_accepted_total << ")\n";
    }
    return 0;
}

}  // namespace cria::server
