// Grammar sampler overhead per generated token with a 150k-token vocabulary.
//
// The vocabulary is synthetic but shaped like a real byte-level BPE one
// (GPT-2 byte encoding): all 256 bytes, then words with and without a
// leading space, digits, punctuation runs, JSON-ish pieces and multi-byte
// characters (some split mid-character). A generation loop draws random
// logits, applies the JSON grammar, picks the best allowed token (closing
// things after a while, so documents end) and accepts it. Only apply() and
// accept() are timed, in thread CPU time ("Time" column).
//
//   cmake -S . -B build-grammar -G Ninja -DCRIA_BUILD_BENCH=ON && cmake --build build-grammar --target bench_grammar_sampler
//   build-grammar/bench/bench_grammar_sampler

#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "cria/grammar/sampler.h"

using namespace cria::grammar;
using cria::vocab::TokenId;

namespace {

// GPT-2's reversible byte -> printable code point map.
std::string byte_to_unicode_text(const std::string& bytes) {
    static const std::vector<std::string> table = [] {
        std::vector<std::string> t(256);
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
            uint32_t cp = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + n++);
            std::string s;
            if (cp < 0x80) s += static_cast<char>(cp);
            else { s += static_cast<char>(0xC0 | (cp >> 6)); s += static_cast<char>(0x80 | (cp & 0x3F)); }
            t[static_cast<size_t>(b)] = s;
        }
        return t;
    }();
    std::string out;
    for (unsigned char c : bytes) out += table[c];
    return out;
}

const cria::vocab::Vocab& synthetic_vocab() {
    static const cria::vocab::Vocab vocab = [] {
        constexpr size_t kSize = 150000;
        std::mt19937 rng(7);
        std::set<std::string> seen;
        std::vector<std::string> raw;
        auto add = [&](const std::string& s) { if (!s.empty() && seen.insert(s).second) raw.push_back(s); };
        for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)));
        const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
        std::discrete_distribution<int> letter_freq({12, 9, 8, 7.5, 7, 6.7, 6.3, 6, 6, 4.3, 4, 2.8, 2.8, 2.4, 2.4, 2.2, 2, 2, 1.9, 1.5, 1, 0.8, 0.2, 0.2, 0.1, 0.1});
        const std::vector<std::string> punct = {"\"", "\":", "\": ", "{\"", "\"}", "\",", "\", \"", "[", "]", "},", "{", "}", ":", ",", ", ",
                                                ".", "!", "?", "'s", "\\n", "\n", "\n\n", "  ", "    ", "\t", "(", ")", "-", "_", "/"};
        for (const auto& p : punct) add(p);
        for (int i = 0; i < 1000; ++i) add(std::to_string(i));
        const std::vector<std::string> multi = {"é", "è", "ü", "ß", "—", "“", "”", "’", "中", "文", "日本", "の", "😀", "€"};
        for (const auto& m : multi) { add(m); add(" " + m); add(m.substr(0, m.size() - 1)); }
        while (raw.size() < kSize) {
            std::string w;
            int len = 1 + static_cast<int>(rng() % 9);
            for (int i = 0; i < len; ++i) w += letters[static_cast<size_t>(letter_freq(rng))];
            int shape = static_cast<int>(rng() % 10);
            if (shape < 5) w = " " + w;
            else if (shape == 5) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
            else if (shape == 6) w = " " + std::string(1, static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])))) + w.substr(1);
            else if (shape == 7) w += punct[rng() % punct.size()];
            add(w);
        }
        cria::vocab::VocabSpec spec;
        spec.model = "gpt2";
        spec.pre = "llama3";
        for (const auto& r : raw) spec.tokens.push_back(byte_to_unicode_text(r));
        spec.tokens.push_back("<|end_of_text|>");
        spec.types.assign(spec.tokens.size(), 1);
        spec.types.back() = 3;
        spec.eos = static_cast<TokenId>(spec.tokens.size() - 1);
        return cria::vocab::Vocab::build(std::move(spec));
    }();
    return vocab;
}

// CPU time of this thread: the machine is shared, wall time would count others' work.
double thread_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string json_grammar() {
    // The repository's copy, found relative to this source file.
    std::ifstream in(std::filesystem::path(__FILE__).parent_path().parent_path() / "tests/data/grammars/json.gbnf");
    if (!in) throw std::runtime_error("tests/data/grammars/json.gbnf not found");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void BM_VocabIndexBuild(benchmark::State& state) {
    const auto& vocab = synthetic_vocab();
    for (auto _ : state) benchmark::DoNotOptimize(VocabIndex::build(vocab));
    state.counters["tokens"] = static_cast<double>(vocab.size());
}
BENCHMARK(BM_VocabIndexBuild)->Unit(benchmark::kMillisecond);

// arg 0: mask cache entries (0 = walk the vocabulary trie on every token).
void BM_JsonGenerationPerToken(benchmark::State& state) {
    const auto& vocab = synthetic_vocab();
    static const auto index = VocabIndex::build(vocab);
    static const auto grammar = std::make_shared<const Grammar>(parse_gbnf(json_grammar()));
    SamplerOptions options;
    options.mask_cache_entries = static_cast<size_t>(state.range(0));
    std::mt19937 rng(1);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    std::vector<float> logits(vocab.size());
    const std::vector<TokenId> closers = {index->find("\""), index->find("}"), index->find("]"), index->find(":"), index->find("0")};
    auto sampler = std::make_unique<GrammarSampler>(index, grammar, options);
    int step = 0, documents = 0;
    for (auto _ : state) {
        for (float& l : logits) l = noise(rng);
        double t0 = thread_seconds();
        sampler->apply(std::span<float>(logits));
        double t1 = thread_seconds();
        TokenId pick = -1;
        if (step > 60) {
            if (!std::isinf(logits[static_cast<size_t>(vocab.eos())])) pick = vocab.eos();
            for (TokenId c : closers) if (pick < 0 && c >= 0 && !std::isinf(logits[static_cast<size_t>(c)])) pick = c;
        }
        if (pick < 0) pick = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        double t2 = thread_seconds();
        sampler->accept(pick);
        double t3 = thread_seconds();
        state.SetIterationTime((t1 - t0) + (t3 - t2));
        ++step;
        if (vocab.is_eog(pick)) {  // next document, same sampler state machine caches
            sampler->reset();
            step = 0;
            ++documents;
        }
    }
    state.counters["documents"] = documents;
    state.counters["states"] = static_cast<double>(sampler->automaton().state_count());
}
BENCHMARK(BM_JsonGenerationPerToken)->Arg(256)->Arg(0)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(3000);

}  // namespace

BENCHMARK_MAIN();
