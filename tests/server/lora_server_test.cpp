// LoRA adapters in the server: every slot decodes with the server's scales
// (a synthetic base + adapter gives the merged model's tokens and
// log-probabilities), scale 0 gives the base, requests with scales of their
// own ("lora") running at once each get their scales, and no cached cells
// (slots, the prompt cache) computed under some scales serve others.
#include <gtest/gtest.h>

#include <httplib.h>

#include <cmath>
#include <csignal>
#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/model/synthetic_model.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/scheduler.h"
#include "cria/server/server.h"
#include "support/lora_files.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {

struct Outcome {
    std::vector<TokenLogprob> tokens;
    GenerationEvent done;
};

Outcome wait(const std::shared_ptr<RequestHandle>& h) {
    Outcome r;
    for (int i = 0; i < 600; ++i) {  // bounded: 60 s
        auto ev = h->pop(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (ev->kind == GenerationEvent::Kind::Text) {
            r.tokens.insert(r.tokens.end(), ev->logprobs.begin(), ev->logprobs.end());
            continue;
        }
        r.done = *ev;
        return r;
    }
    ADD_FAILURE() << "no result within 60 s";
    return r;
}

GenerationRequest greedy(int n) {
    GenerationRequest g;
    g.prompt = {1, 17, 250, 3, 99, 311, 8, 42};
    g.sampling.temp = 0.0f;
    g.sampling.ignore_eos = true;
    g.max_tokens = n;
    g.top_logprobs = 0;
    return g;
}

RuntimeBackendParams params(std::vector<std::pair<std::string, float>> lora = {}) {
    RuntimeBackendParams p;
    p.n_seq = 2;
    p.n_ctx = 512;
    p.n_batch = 64;
    p.n_threads = 2;
    p.lora = std::move(lora);
    return p;
}

// Largest difference of the chosen tokens' log-probabilities (the ids must agree).
double logprob_gap(const Outcome& a, const Outcome& b) {
    EXPECT_EQ(a.tokens.size(), b.tokens.size());
    double gap = 0;
    for (size_t i = 0; i < a.tokens.size() && i < b.tokens.size(); ++i) {
        EXPECT_EQ(a.tokens[i].id, b.tokens[i].id) << "token " << i;
        gap = std::max(gap, std::fabs(static_cast<double>(a.tokens[i].logprob) - b.tokens[i].logprob));
    }
    return gap;
}

TEST(ServerLora, SlotsDecodeWithTheServersScales) {
    const auto dir = cria::test::temp_dir() / "lora-server";
    std::filesystem::create_directories(dir);
    const std::string base_path = (dir / "base.gguf").string();
    cria::model::SyntheticModelSpec spec = cria::model::SyntheticModelSpec::tiny("llama");
    spec.weight_type = cria::ElementType::F32;
    cria::model::write_synthetic_model(spec, base_path);
    const auto base_file = cria::gguf::File::open(base_path);
    cria::test::AdapterSpec adapter;
    adapter.alpha = 4.0f;
    adapter.tensors = {cria::test::random_pair(*base_file, "blk.0.attn_q.weight", 4, 11),
                       cria::test::random_pair(*base_file, "blk.1.ffn_down.weight", 4, 12),
                       cria::test::random_pair(*base_file, "blk.1.attn_k.weight", 2, 13)};
    const std::string adapter_path = (dir / "adapter.gguf").string();
    const std::string merged_path = (dir / "merged.gguf").string();
    cria::test::write_adapter(adapter, adapter_path);
    cria::test::write_merged(*base_file, {{&adapter, 0.5f}}, merged_path);

    RuntimeBackend merged_backend(merged_path, params());
    Scheduler merged(merged_backend, {.n_slots = 2});
    const Outcome expected = wait(merged.submit(greedy(12)));
    RuntimeBackend base_backend(base_path, params());
    Scheduler base(base_backend, {.n_slots = 2});
    const Outcome plain = wait(base.submit(greedy(12)));

    RuntimeBackend backend(base_path, params({{adapter_path, 0.5f}}));
    ASSERT_EQ(backend.lora_adapters().size(), 1u);
    EXPECT_EQ(backend.lora_adapters()[0].path, adapter_path);
    EXPECT_EQ(backend.lora_adapters()[0].scale, 0.5f);
    Scheduler s(backend, {.n_slots = 2, .prompt_cache_bytes = 16u << 20});
    // Two requests at once (in one batch when both hold a slot): the server's scales for every row.
    auto r1 = s.submit(greedy(12));
    auto r2 = s.submit(greedy(12));
    const Outcome got1 = wait(r1), got2 = wait(r2);
    EXPECT_LT(logprob_gap(got1, expected), 1e-3);
    EXPECT_LT(logprob_gap(got2, expected), 1e-3);

    // Scale 0: the base model, and nothing cached under the old scale is reused.
    s.set_lora_scales({0.0f});
    EXPECT_EQ(s.lora_scales(), std::vector<float>{0.0f});
    const Outcome zero = wait(s.submit(greedy(12)));
    EXPECT_EQ(zero.done.n_cached, 0);
    EXPECT_LT(logprob_gap(zero, plain), 1e-5);
    double adapter_effect = 0;
    for (size_t i = 0; i < plain.tokens.size() && i < expected.tokens.size(); ++i)
        adapter_effect = std::max(adapter_effect, std::fabs(static_cast<double>(plain.tokens[i].logprob) - expected.tokens[i].logprob));
    EXPECT_GT(adapter_effect, 1e-2);  // (or the ids differ, which logprob_gap would not allow either)

    EXPECT_THROW(s.set_lora_scales({1.0f, 2.0f}), cria::Error);
    // Busy slots keep the scales they started with; the server's change for later requests.
    auto busy = s.submit(greedy(400));
    bool started = false;
    for (int i = 0; i < 100 && !started; ++i) {
        auto ev = busy->pop(std::chrono::milliseconds(100));
        started = ev && ev->kind == GenerationEvent::Kind::Text;
    }
    ASSERT_TRUE(started);
    EXPECT_NO_THROW(s.set_lora_scales({0.5f}));
    busy->cancel();
    wait(busy);
    GenerationRequest bad = greedy(2);
    bad.lora = {1.0f, 1.0f};  // two scales, one adapter
    EXPECT_THROW(s.submit(bad), cria::Error);
}

// Requests with their own scales: two at once with different scales each
// equal the merged model at that scale (in one batch, each row under its
// request's scales), scale 0 equals the base, and neither a slot's cells nor the prompt
// cache serve a request under other scales.
TEST(ServerLora, PerRequestScales) {
    const auto dir = cria::test::temp_dir() / "lora-per-request";
    std::filesystem::create_directories(dir);
    const std::string base_path = (dir / "base.gguf").string();
    cria::model::SyntheticModelSpec spec = cria::model::SyntheticModelSpec::tiny("llama");
    spec.weight_type = cria::ElementType::F32;
    cria::model::write_synthetic_model(spec, base_path);
    const auto base_file = cria::gguf::File::open(base_path);
    cria::test::AdapterSpec adapter;
    adapter.alpha = 4.0f;
    adapter.tensors = {cria::test::random_pair(*base_file, "blk.0.attn_v.weight", 4, 31),
                       cria::test::random_pair(*base_file, "blk.1.ffn_gate.weight", 4, 32)};
    const std::string adapter_path = (dir / "adapter.gguf").string();
    const std::string merged_path = (dir / "merged.gguf").string();
    cria::test::write_adapter(adapter, adapter_path);
    cria::test::write_merged(*base_file, {{&adapter, 1.0f}}, merged_path);

    Outcome merged, plain;
    {
        RuntimeBackend b(merged_path, params());
        Scheduler sched(b, {.n_slots = 1});
        merged = wait(sched.submit(greedy(12)));
    }
    {
        RuntimeBackend b(base_path, params());
        Scheduler sched(b, {.n_slots = 1});
        plain = wait(sched.submit(greedy(12)));
    }
    auto with_scale = [](float scale) {
        GenerationRequest g = greedy(12);
        g.lora = {scale};
        return g;
    };
    // The server's scale (0.25) is neither: a request naming its own must not get it.
    {
        RuntimeBackend backend(base_path, params({{adapter_path, 0.25f}}));
        Scheduler s(backend, {.n_slots = 2});
        auto one = s.submit(with_scale(1.0f));
        auto zero = s.submit(with_scale(0.0f));
        const Outcome got_one = wait(one), got_zero = wait(zero);
        EXPECT_LT(logprob_gap(got_one, merged), 1e-3);
        EXPECT_LT(logprob_gap(got_zero, plain), 1e-5);
        EXPECT_EQ(got_zero.done.n_cached, 0);
    }
    {
        // One slot and the prompt cache: each request's prompt is the same,
        // so only the scales decide what may be reused.
        RuntimeBackend backend(base_path, params({{adapter_path, 0.25f}}));
        Scheduler s(backend, {.n_slots = 1, .prompt_cache_bytes = 16u << 20});
        const Outcome a = wait(s.submit(with_scale(1.0f)));
        const Outcome b = wait(s.submit(with_scale(0.0f)));  // the slot's cells (scale 1) go to the cache
        EXPECT_EQ(b.done.n_cached, 0);
        EXPECT_LT(logprob_gap(b, plain), 1e-5);
        EXPECT_EQ(s.stats().prompt_cache_hits, 0u);
        const Outcome c = wait(s.submit(with_scale(1.0f)));  // scale 1's entry is loaded
        EXPECT_GT(c.done.n_cached, 0);
        EXPECT_EQ(s.stats().prompt_cache_hits, 1u);
        EXPECT_LT(logprob_gap(c, merged), 1e-3);
        const Outcome d = wait(s.submit(greedy(12)));  // the server's 0.25: nothing cached under it
        EXPECT_EQ(d.done.n_cached, 0);
        EXPECT_EQ(s.stats().prompt_cache_hits, 1u);
        EXPECT_LT(logprob_gap(a, merged), 1e-3);

        // Slot files record the scales: cells under scale 1 restore only while
        // the server's scales are 1 (a restore is under the server's scales).
        const Outcome e = wait(s.submit(with_scale(1.0f)));
        EXPECT_EQ(e.done.slot, 0);
        const std::string slot_file = (dir / "slot.bin").string();
        ASSERT_GT(s.save_slot(0, slot_file), 0u);
        EXPECT_THROW(s.restore_slot(0, slot_file), cria::Error);  // the server's 0.25
        s.set_lora_scales({1.0f});
        ASSERT_GT(s.restore_slot(0, slot_file), 0u);
        const Outcome f = wait(s.submit(with_scale(1.0f)));  // the restored cells are reused
        EXPECT_GT(f.done.n_cached, 0);
        EXPECT_LT(logprob_gap(f, merged), 1e-3);
    }
}

// Requests under different scales share a batch: scales {0, 0}, {1, 0}
// and {0.5, -0.7} (a second adapter) started in one step decode together
// (as many decode calls as three requests under one set of scales), and
// each gets the tokens and log-probabilities it gets running alone.
TEST(ServerLora, DifferentScalesShareABatch) {
    const auto dir = cria::test::temp_dir() / "lora-mixed";
    std::filesystem::create_directories(dir);
    const std::string base_path = (dir / "base.gguf").string();
    cria::model::SyntheticModelSpec spec = cria::model::SyntheticModelSpec::tiny("llama");
    spec.weight_type = cria::ElementType::F32;
    cria::model::write_synthetic_model(spec, base_path);
    const auto base_file = cria::gguf::File::open(base_path);
    cria::test::AdapterSpec a, b;
    a.alpha = 4.0f;
    a.tensors = {cria::test::random_pair(*base_file, "blk.0.attn_q.weight", 4, 41),
                 cria::test::random_pair(*base_file, "blk.1.ffn_down.weight", 4, 42)};
    b.tensors = {cria::test::random_pair(*base_file, "blk.0.attn_q.weight", 2, 43),
                 cria::test::random_pair(*base_file, "blk.1.ffn_up.weight", 2, 44)};
    const std::string a_path = (dir / "a.gguf").string(), b_path = (dir / "b.gguf").string();
    cria::test::write_adapter(a, a_path);
    cria::test::write_adapter(b, b_path);
    const std::vector<std::vector<float>> scales = {{0.0f, 0.0f}, {1.0f, 0.0f}, {0.5f, -0.7f}};
    auto request = [](const std::vector<float>& lora) {
        GenerationRequest g = greedy(10);
        g.lora = lora;
        return g;
    };
    RuntimeBackendParams p = params({{a_path, 0.25f}, {b_path, 0.25f}});
    p.n_seq = 3;

    std::vector<Outcome> alone;
    for (const auto& lora : scales) {
        RuntimeBackend backend(base_path, p);
        Scheduler s(backend, {.n_slots = 3});
        alone.push_back(wait(s.submit(request(lora))));
    }
    EXPECT_GT(std::fabs(alone[1].tokens[0].logprob - alone[0].tokens[0].logprob) +
                  std::fabs(alone[2].tokens[0].logprob - alone[0].tokens[0].logprob),
              1e-3);  // the scales matter

    auto together = [&](const std::vector<std::vector<float>>& sets, std::vector<Outcome>& out) {
        RuntimeBackend backend(base_path, p);
        EXPECT_TRUE(backend.mixes_lora_scales());
        Scheduler s(backend, {.n_slots = 3, .start_paused = true});
        std::vector<std::shared_ptr<RequestHandle>> handles;
        for (const auto& lora : sets) handles.push_back(s.submit(request(lora)));
        s.resume();
        for (auto& h : handles) out.push_back(wait(h));
        return s.stats().decode_calls;
    };
    std::vector<Outcome> mixed, same;
    const uint64_t mixed_calls = together(scales, mixed);
    const uint64_t same_calls = together({scales[1], scales[1], scales[1]}, same);
    std::printf("[ lora mixed ] decode calls: three scale sets %llu, one set %llu\n",
                static_cast<unsigned long long>(mixed_calls), static_cast<unsigned long long>(same_calls));
    EXPECT_EQ(mixed_calls, same_calls);
    EXPECT_LE(mixed_calls, 10u);  // the prompts in one decode, then one per generated token after the first
    for (size_t k = 0; k < scales.size(); ++k) {
        SCOPED_TRACE("scales " + std::to_string(k));
        const double gap = logprob_gap(mixed[k], alone[k]);
        std::printf("[ lora mixed ] request %zu: largest log-prob gap to running alone %.3g\n", k, gap);
        EXPECT_LT(gap, 1e-4);
    }
}

// The routes: the list, new scales (adapters not named at 0), bad ids and
// scales, and a request's "lora" (adapters it does not name at 0; an empty
// list: the server's scales).
TEST(ServerLora, Routes) {
    using json = nlohmann::json;
    std::signal(SIGPIPE, SIG_IGN);
    const auto dir = cria::test::temp_dir() / "lora-routes";
    std::filesystem::create_directories(dir);
    const std::string base_path = (dir / "base.gguf").string();
    cria::model::SyntheticModelSpec spec = cria::model::SyntheticModelSpec::tiny("llama");
    spec.weight_type = cria::ElementType::F32;
    cria::model::write_synthetic_model(spec, base_path);
    const auto base_file = cria::gguf::File::open(base_path);
    cria::test::AdapterSpec a, b;
    a.tensors = {cria::test::random_pair(*base_file, "blk.0.attn_v.weight", 2, 21)};
    b.tensors = {cria::test::random_pair(*base_file, "blk.1.ffn_up.weight", 2, 22)};
    const std::string a_path = (dir / "a.gguf").string(), b_path = (dir / "b.gguf").string();
    cria::test::write_adapter(a, a_path);
    cria::test::write_adapter(b, b_path);

    ServerConfig config;
    config.port = 0;
    config.model_path = base_path;
    config.scheduler.n_slots = 1;
    Server server(std::make_unique<RuntimeBackend>(base_path, params({{a_path, 1.0f}, {b_path, 0.25f}})), config);
    server.start();
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(30, 0);
    const json listed = json::parse(c.Get("/lora-adapters")->body);
    EXPECT_EQ(listed, json::parse(R"([{"id":0,"path":")" + a_path + R"(","scale":1.0},{"id":1,"path":")" + b_path +
                                  R"(","scale":0.25}])"));
    auto post = [&](const std::string& path, const std::string& body) { return c.Post(path.c_str(), body, "application/json"); };
    auto r = post("/lora-adapters", R"([{"id":1,"scale":-0.5}])");
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)[0]["scale"], 0.0);  // not listed: 0, as llama-server
    EXPECT_EQ(json::parse(r->body)[1]["scale"], -0.5);
    EXPECT_EQ(post("/lora-adapters", R"([{"id":2,"scale":1}])")->status, 400);
    EXPECT_EQ(post("/lora-adapters", R"([{"id":0,"scale":"big"}])")->status, 400);
    EXPECT_EQ(post("/lora-adapters", R"({"id":0,"scale":1})")->status, 400);
    EXPECT_EQ(json::parse(c.Get("/lora-adapters")->body)[1]["scale"], -0.5);  // refused posts changed nothing

    const std::string prompt = R"("prompt":[1,17,250],"max_tokens":2,"temperature":0)";
    auto text_of = [&](const std::string& lora) {
        auto r = post("/v1/completions", "{" + prompt + lora + "}");
        EXPECT_EQ(r->status, 200) << r->body;
        return json::parse(r->body)["choices"][0]["text"].get<std::string>();
    };
    EXPECT_EQ(text_of(R"(,"lora":[{"id":1,"scale":2}])"), text_of(R"(,"lora":[{"id":0,"scale":0},{"id":1,"scale":2}])"));
    EXPECT_EQ(text_of(R"(,"lora":[])"), text_of(""));
    EXPECT_EQ(post("/v1/completions", "{" + prompt + R"(,"lora":[{"id":7,"scale":1}]})")->status, 400);
    EXPECT_EQ(post("/v1/completions", "{" + prompt + R"(,"lora":[{"id":0,"scale":"x"}]})")->status, 400);
    EXPECT_EQ(post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"lora":[{"id":0,"scale":0.5}]})")->status, 200);
    server.stop();
    server.wait();
}

}  // namespace
