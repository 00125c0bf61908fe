// The scheduler's context shift (llama-server's --context-shift) on
// stories260K with slots of 32 positions: a request goes past its context
// and its tokens are the ones `cria run --context-shift` gives (same
// trigger, same n_keep with the BOS, same n_discard); n_keep and n_discard
// take effect; without the option a request ends at the full context as
// before; a shift that would move cells another busy request shares fails
// that request (llama-server's "shared prompt" error); models and options
// that cannot shift are refused when the scheduler is made.
#include <gtest/gtest.h>

#include <httplib.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/context.h"
#include "cria/runtime/context_shift.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/params.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/scheduler.h"
#include "cria/server/server.h"
#include "cria/vocab/streaming_detokenizer.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {

std::string model() { return cria::test::model_path("stories260K/stories260K.gguf").string(); }

constexpr int32_t kCtx = 32;

struct Result {
    std::string text;
    GenerationEvent done;
};

Result wait(const std::shared_ptr<RequestHandle>& h) {
    Result r;
    for (int i = 0; i < 600; ++i) {  // bounded: 60 s
        auto ev = h->pop(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (ev->kind == GenerationEvent::Kind::Text) {
            r.text += ev->text;
            continue;
        }
        r.done = *ev;
        return r;
    }
    ADD_FAILURE() << "no result within 60 s";
    return r;
}

RuntimeBackendParams params(int n_seq) {
    RuntimeBackendParams p;
    p.n_seq = n_seq;
    p.n_ctx = kCtx * n_seq;
    p.n_batch = 64;
    p.n_threads = 2;
    return p;
}

GenerationRequest greedy(const cria::vocab::Vocab& v, const std::string& prompt, int n) {
    GenerationRequest g;
    g.prompt = v.tokenize(prompt, true, false);
    g.sampling.temp = 0.0f;
    g.max_tokens = n;
    return g;
}

// What cria run --context-shift --keep `keep` writes for the request.
std::string run_with_shift(const GenerationRequest& g, const cria::vocab::Vocab& vocab, int32_t keep) {
    auto loaded = cria::model::Model::load(model());
    cria::runtime::ContextParams cp;
    cp.n_ctx = kCtx;
    cp.n_threads = 2;
    cria::runtime::Context ctx(*loaded, cp);
    cria::sampling::ChainContext cc;
    cc.vocab = &vocab;
    cc.n_ctx = kCtx;
    cc.n_ctx_train = kCtx;
    auto chain = cria::sampling::build_chain(g.sampling, cc);
    const cria::runtime::ContextShiftPolicy shift{true, cria::runtime::completion_n_keep(keep, g.prompt.size(), vocab.add_bos())};
    const auto r = cria::runtime::generate(ctx, vocab, chain, g.prompt, g.max_tokens, {}, shift);
    cria::vocab::StreamingDetokenizer detok(vocab);
    std::string text;
    for (auto t : r.tokens) text += detok.push(t);
    return text + detok.flush();
}

}  // namespace

TEST(ContextShiftServer, GoesPastTheContextAsCriaRunDoes) {
    RuntimeBackend backend(model(), params(1));
    Scheduler s(backend, {.n_slots = 1, .context_shift = true});
    for (int32_t keep : {0, 3}) {
        GenerationRequest g = greedy(backend.vocab(), "Once upon a time", 80);
        g.n_keep = keep;
        const Result r = wait(s.submit(g));
        EXPECT_EQ(r.done.kind, GenerationEvent::Kind::Done) << r.done.error;
        EXPECT_EQ(r.done.n_generated, 80) << "keep " << keep;
        EXPECT_EQ(r.done.finish_reason, "length");
        EXPECT_EQ(r.text, run_with_shift(g, backend.vocab(), keep)) << "keep " << keep;
    }
    EXPECT_GE(s.stats().context_shifts_total, 4u);  // 80 tokens in 32 positions: at least twice per request
}

TEST(ContextShiftServer, KeepAndDiscardTakeEffect) {
    RuntimeBackend backend(model(), params(1));
    Scheduler s(backend, {.n_slots = 1, .context_shift = true});
    auto run = [&](std::optional<int32_t> keep, int32_t discard) {
        GenerationRequest g = greedy(backend.vocab(), "Lily and Tom went to the park.", 60);
        g.n_keep = keep;
        g.n_discard = discard;
        const Result r = wait(s.submit(g));
        EXPECT_EQ(r.done.n_generated, 60) << r.done.error;
        return r.text;
    };
    const std::string base = run(0, 0);
    EXPECT_NE(run(-1, 0), base);  // the whole prompt kept
    EXPECT_NE(run(0, 4), base);   // 4 dropped at a time instead of half
    EXPECT_EQ(run(std::nullopt, 0), base);  // unset: the server's default (0)
}

TEST(ContextShiftServer, WithoutTheOptionARequestEndsAtTheFullContext) {
    RuntimeBackend backend(model(), params(1));
    Scheduler s(backend, {.n_slots = 1});
    GenerationRequest g = greedy(backend.vocab(), "Once upon a time", 80);
    g.n_keep = -1;  // no effect without the option
    const Result r = wait(s.submit(g));
    EXPECT_EQ(r.done.finish_reason, "length");
    EXPECT_LT(r.done.n_generated, kCtx);
    EXPECT_EQ(s.stats().context_shifts_total, 0u);
}

TEST(ContextShiftServer, AShiftOfCellsABusyRequestSharesFailsThatRequest) {
    // A first request leaves the prompt in slot 0's cache; then two requests
    // of that prompt start in one step: one reuses slot 0's cells, the other
    // borrows them (as n > 1 choices do). The prompt reaches past the
    // positions a shift moves, so the first of them to shift would move cells
    // the other still reads: it fails, and the other, once alone, shifts.
    RuntimeBackend backend(model(), params(2));
    Scheduler s(backend, {.n_slots = 2, .context_shift = true, .start_paused = true});
    GenerationRequest g = greedy(backend.vocab(), "Once upon a time, there was a little girl named Lily. She liked", 40);
    ASSERT_GT(g.prompt.size(), 18u);
    ASSERT_LT(g.prompt.size(), 28u);
    GenerationRequest warm = g;
    warm.max_tokens = 1;
    auto w = s.submit(warm);
    s.resume();
    EXPECT_EQ(wait(w).done.kind, GenerationEvent::Kind::Done);
    s.pause();
    auto first = s.submit(g), second = s.submit(g);
    s.resume();
    const Result a = wait(first), b = wait(second);
    const bool a_failed = a.done.kind == GenerationEvent::Kind::Error;
    const Result& failed = a_failed ? a : b;
    const Result& done = a_failed ? b : a;
    EXPECT_EQ(failed.done.kind, GenerationEvent::Kind::Error);
    EXPECT_NE(failed.done.error.find("context shift cannot be used for shared prompt"), std::string::npos)
        << failed.done.error;
    EXPECT_EQ(done.done.kind, GenerationEvent::Kind::Done) << done.done.error;
    EXPECT_EQ(done.done.n_generated, 40);
    EXPECT_EQ(done.done.n_cached, static_cast<int32_t>(g.prompt.size()) - 1);  // it held the shared prompt
}

TEST(ContextShiftServer, ModelsAndOptionsThatCannotShiftAreRefused) {
    {
        RuntimeBackend backend(model(), params(1));
        SchedulerOptions o{.n_slots = 1, .context_shift = true};
        o.speculative.types = {cria::spec::SpecType::NgramSimple};
        try {
            Scheduler s(backend, o);
            ADD_FAILURE() << "speculative decoding with a context shift was not refused";
        } catch (const cria::Error& e) {
            EXPECT_NE(std::string(e.what()).find("--context-shift does not work with speculative decoding"),
                      std::string::npos) << e.what();
        }
    }
    // gemma2's window of 8 is shorter than the slot's context.
    cria::model::SyntheticModelSpec spec = cria::model::SyntheticModelSpec::tiny("gemma2");
    const auto path = (cria::test::temp_dir() / "context-shift-server-gemma2.gguf").string();
    cria::model::write_synthetic_model(spec, path);
    RuntimeBackend backend(path, params(1));
    try {
        Scheduler s(backend, {.n_slots = 1, .context_shift = true});
        ADD_FAILURE() << "a model with a short sliding window was not refused";
    } catch (const cria::Error& e) {
        EXPECT_NE(std::string(e.what()).find("--context-shift: this model cannot shift its context: layer 0 has a "
                                             "sliding window of 8 positions"),
                  std::string::npos) << e.what();
    }
}

// Over HTTP: the request's n_keep and the server's default (--keep, in
// /props) reach the scheduler; a completion longer than the slot's context
// is served whole.
TEST(ContextShiftServer, HttpCompletionGoesPastTheContext) {
    std::signal(SIGPIPE, SIG_IGN);
    ServerConfig config;
    config.port = 0;
    config.model_path = model();
    config.default_n_keep = 2;
    config.scheduler.context_shift = true;
    Server server(std::make_unique<RuntimeBackend>(model(), params(1)), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(60, 0);
    auto props = c.Get("/props");
    ASSERT_TRUE(props);
    EXPECT_EQ(nlohmann::json::parse(props->body)["default_generation_settings"]["params"]["n_keep"], 2);
    std::string texts[2];
    for (int i = 0; i < 2; ++i) {
        nlohmann::json body = {{"prompt", "Once upon a time"}, {"max_tokens", 70}, {"temperature", 0}};
        if (i == 1) body["n_keep"] = -1;
        auto r = c.Post("/v1/completions", body.dump(), "application/json");
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        const auto j = nlohmann::json::parse(r->body);
        EXPECT_EQ(j["usage"]["completion_tokens"], 70);
        EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
        texts[i] = j["choices"][0]["text"];
    }
    EXPECT_NE(texts[0], texts[1]);  // the default n_keep 2 and the whole prompt differ after the first shift
    // llama-server's native reply says a shift happened ("truncated").
    auto native = c.Post("/completion", R"({"prompt":"Once upon a time","n_predict":70,"temperature":0})", "application/json");
    ASSERT_TRUE(native);
    const auto n = nlohmann::json::parse(native->body);
    EXPECT_EQ(n["truncated"], true) << native->body;
    EXPECT_EQ(n["content"], texts[0]);
    auto brief = c.Post("/completion", R"({"prompt":"Once upon a time","n_predict":4,"temperature":0})", "application/json");
    ASSERT_TRUE(brief);
    EXPECT_EQ(nlohmann::json::parse(brief->body)["truncated"], false);
}
