#pragma once
// A Backend with a real vocabulary (a GGUF's) and made-up logits, for the
// HTTP fuzz target and its replay test: each decode is instant and
// deterministic (the next token follows from the last token and position;
// every fifth position favours end of generation), so requests run through
// the whole server (queue, slots, sampling, streaming) without a model.
#include <cmath>
#include <string>
#include <vector>

#include "cria/server/backend.h"
#include "cria/vocab/vocab.h"

namespace cria::test {

class StubBackend final : public server::Backend {
public:
    explicit StubBackend(const std::string& gguf_path) : vocab_(vocab::Vocab::load(gguf_path)) {}

    const vocab::Vocab& vocab() const override { return vocab_; }
    int32_t n_vocab() const override { return static_cast<int32_t>(vocab_.size()); }
    int32_t n_ctx_per_seq() const override { return 2048; }
    int32_t max_batch() const override { return 64; }
    std::string model_name() const override { return "stub"; }
    std::string chat_template() const override { return ""; }

    void decode(std::span<const server::BatchToken> batch, std::vector<float>& logits) override {
        logits.clear();
        const int32_t nv = n_vocab();
        for (const auto& t : batch) {
            if (!t.logits) continue;
            const size_t base = logits.size();
            logits.resize(base + static_cast<size_t>(nv));
            for (int32_t i = 0; i < nv; ++i) logits[base + i] = std::sin(0.37f * static_cast<float>(i + t.token));
            const bool stop = t.pos % 5 == 4 && vocab_.eos() >= 0 && vocab_.eos() < nv;
            const int32_t favourite = stop ? vocab_.eos() : (t.token * 31 + t.pos * 7 + 3) % nv;
            logits[base + static_cast<size_t>(favourite)] += 8.0f;
        }
    }
    bool seq_keep_prefix(int32_t, int32_t) override { return true; }
    bool checkpoint_begin(int32_t, int32_t) override { return false; }
    bool checkpoint_commit(int32_t, int32_t) override { return false; }
    int32_t max_embedding_tokens() const override { return 64; }
    std::vector<float> embed(std::span<const vocab::TokenId> tokens) override {
        std::vector<float> v(8, 0.0f);
        for (size_t i = 0; i < tokens.size(); ++i) v[i % v.size()] += static_cast<float>(tokens[i] % 97);
        float norm = 0;
        for (float x : v) norm += x * x;
        norm = norm > 0 ? std::sqrt(norm) : 1.0f;
        for (float& x : v) x /= norm;
        return v;
    }

private:
    vocab::Vocab vocab_;
};

}  // namespace cria::test
