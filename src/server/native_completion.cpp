// llama-server's native completion request and reply objects (native_completion.h).
// Field names and prompt forms follow llama-server (build 10470): a prompt is a
// string, token ids, or a list mixing both (one prompt); any other list holds
// several prompts. Every wrong type is a 400 naming the field.
#include "native_completion.h"

namespace cria::server {

namespace {

std::vector<TokenId> token_ids_of(const json& items, const vocab::Vocab& vocab, int32_t n_vocab) {
    // A list of ids and strings is one prompt: each string is tokenized in
    // place, the BOS (if the vocabulary adds one) only before a leading string.
    std::vector<TokenId> ids;
    bool first = true;
    for (const json& item : items) {
        if (item.is_string()) {
            const auto piece = vocab.tokenize(item.get<std::string>(), first, /*parse_special=*/true);
            ids.insert(ids.end(), piece.begin(), piece.end());
        } else if (item.is_number_integer() && item.get<int64_t>() >= 0 && item.get<int64_t>() < n_vocab) {
            // Range-checked before narrowing: 4294967301 must not become token 5.
            ids.push_back(static_cast<TokenId>(item.get<int64_t>()));
        } else {
            throw bad_request("'prompt' token ids must be integers in 0.." + std::to_string(n_vocab - 1), "prompt");
        }
        first = false;
    }
    return ids;
}

bool is_single_prompt_list(const json& items) {
    // Only ids, or ids and strings mixed: llama-server reads it as one prompt.
    bool has_id = false, all_scalars = true;
    for (const json& item : items) {
        has_id = has_id || item.is_number();
        all_scalars = all_scalars && (item.is_number() || item.is_string());
    }
    return has_id && all_scalars;
}

std::vector<TokenId> one_prompt(const json& p, const vocab::Vocab& vocab, int32_t n_vocab) {
    if (p.is_string()) return vocab.tokenize(p.get<std::string>(), true, /*parse_special=*/true);
    if (p.is_array() && is_single_prompt_list(p)) return token_ids_of(p, vocab, n_vocab);
    throw bad_request("'prompt' must be a string, token ids, a list of both, or a list of such prompts", "prompt");
}

bool optional_flag(const json& body, const char* name, bool fallback) {
    if (!body.contains(name) || body[name].is_null()) return fallback;
    if (!body[name].is_boolean()) throw bad_request(std::string("'") + name + "' must be a boolean", name);
    return body[name].get<bool>();
}

json bytes_of(const std::string& s) {
    json out = json::array();
    for (unsigned char c : s) out.push_back(c);
    return out;
}

}  // namespace

NativeCompletionJob parse_native_completion(const json& body, const vocab::Vocab& vocab, int32_t n_vocab,
                                            const sampling::SamplingParams& defaults) {
    NativeCompletionJob job;
    if (body.contains("model") && !body["model"].is_null()) {
        if (!body["model"].is_string()) throw bad_request("'model' must be a string", "model");
        job.model = body["model"].get<std::string>();
    }
    // n_predict (or max_tokens), stop, seed and the sampler fields; llama-server's
    // default n_predict is -1 (until the context ends), GenerationRequest's too.
    parse_openai_sampling(body, job.gen, /*chat=*/false, defaults, nullptr);
    if (!body.contains("prompt") || body["prompt"].is_null()) throw bad_request("'prompt' is required", "prompt");
    const json& prompt = body["prompt"];
    if (prompt.is_array() && !prompt.empty() && !is_single_prompt_list(prompt)) {
        if (prompt.size() > kMaxNativePrompts)
            throw bad_request("'prompt' lists more than " + std::to_string(kMaxNativePrompts) + " prompts", "prompt");
        for (const json& p : prompt) job.prompts.push_back(one_prompt(p, vocab, n_vocab));
    } else {
        job.prompts.push_back(one_prompt(prompt, vocab, n_vocab));
    }
    for (const auto& p : job.prompts)
        if (p.empty()) throw bad_request("'prompt' must not be empty", "prompt");
    job.stream = optional_flag(body, "stream", false);
    job.return_tokens = optional_flag(body, "return_tokens", false);
    // cria reuses a slot's cached prefix whenever it matches (the result is
    // the same); the field is checked so a wrong type is still a 400.
    optional_flag(body, "cache_prompt", true);
    if (body.contains("n_probs") && !body["n_probs"].is_null()) {
        const json& n = body["n_probs"];
        if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > 20)
            throw bad_request("'n_probs' must be an integer 0..20", "n_probs");
        job.n_probs = static_cast<int32_t>(n.get<int64_t>());
    }
    // The scheduler reports each emitted token's id with its log-probability,
    // so return_tokens asks for those (with no alternatives) too.
    if (job.n_probs > 0) job.gen.top_logprobs = job.n_probs;
    else if (job.return_tokens) job.gen.top_logprobs = 0;
    return job;
}

std::string native_stop_type(const std::string& finish_reason, const std::string& stop_word) {
    if (finish_reason == "length") return "limit";
    if (finish_reason == "stop") return stop_word.empty() ? "eos" : "word";
    return "none";
}

json native_generation_settings(const GenerationRequest& gen, bool stream, int32_t n_probs) {
    const auto& s = gen.sampling;
    return json{{"n_predict", gen.max_tokens},
                {"seed", s.seed},
                {"temperature", s.temp},
                {"dynatemp_range", s.dynatemp_range},
                {"dynatemp_exponent", s.dynatemp_exponent},
                {"top_k", s.top_k},
                {"top_p", s.top_p},
                {"min_p", s.min_p},
                {"top_n_sigma", s.top_n_sigma},
                {"xtc_probability", s.xtc_probability},
                {"xtc_threshold", s.xtc_threshold},
                {"typical_p", s.typ_p},
                {"repeat_last_n", s.penalty_last_n},
                {"repeat_penalty", s.penalty_repeat},
                {"presence_penalty", s.penalty_present},
                {"frequency_penalty", s.penalty_freq},
                {"dry_multiplier", s.dry_multiplier},
                {"dry_base", s.dry_base},
                {"dry_allowed_length", s.dry_allowed_length},
                {"dry_penalty_last_n", s.dry_penalty_last_n},
                {"mirostat", s.mirostat},
                {"mirostat_tau", s.mirostat_tau},
                {"mirostat_eta", s.mirostat_eta},
                {"stop", gen.stop},
                {"max_tokens", gen.max_tokens},
                {"ignore_eos", s.ignore_eos},
                {"stream", stream},
                {"n_probs", n_probs},
                {"min_keep", s.min_keep},
                {"grammar", gen.grammar}};
}

json native_probabilities(const std::vector<TokenLogprob>& lps) {
    json out = json::array();
    for (const auto& l : lps) {
        json top = json::array();
        for (const auto& t : l.top)
            top.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", bytes_of(t.token)}});
        out.push_back({{"id", l.id}, {"token", l.token}, {"logprob", l.logprob}, {"bytes", bytes_of(l.token)},
                       {"top_logprobs", top}});
    }
    return out;
}

json native_final_json(const NativeFinal& f, const json& generation_settings) {
    return json{{"index", f.index},
                {"content", f.content},
                {"tokens", f.tokens},
                {"id_slot", f.slot},
                {"stop", true},
                {"model", f.model},
                {"tokens_predicted", f.usage.completion},
                {"tokens_evaluated", f.usage.prompt},
                {"generation_settings", generation_settings},
                {"prompt", f.prompt},
                {"has_new_line", f.content.find('\n') != std::string::npos},
                {"truncated", f.truncated},
                {"stop_type", native_stop_type(f.finish_reason, f.stop_word)},
                {"stopping_word", f.stop_word},
                {"tokens_cached", f.tokens_cached},
                {"timings", timings_json(f.usage)}};
}

json native_partial_json(size_t index, const std::string& content, const std::vector<TokenId>& tokens,
                         size_t n_prompt) {
    return json{{"index", index}, {"content", content}, {"tokens", tokens}, {"stop", false},
                {"tokens_evaluated", n_prompt}};
}

}  // namespace cria::server
