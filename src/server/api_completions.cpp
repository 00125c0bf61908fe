// Validation and conversion of the OpenAI legacy completions and embeddings
// request bodies (api.h), and their response objects (responses.h).
// As for the chat routes, every wrong type is a 400 naming the field.
#include "api.h"
#include "data_url.h"
#include "responses.h"

namespace cria::server {

namespace {

std::string requested_model(const json& body, bool strict) {
    if (!body.contains("model") || body["model"].is_null()) return {};
    if (!body["model"].is_string()) {
        if (strict) throw bad_request("'model' must be a string", "model");
        return {};
    }
    return body["model"].get<std::string>();
}

bool flag(const json& body, const char* name) {
    if (!body.contains(name) || body[name].is_null()) return false;
    if (!body[name].is_boolean()) throw bad_request(std::string("'") + name + "' must be a boolean", name);
    return body[name].get<bool>();
}

// Token ids are checked against the model's logit rows (n_vocab), not the
// tokenizer's size: a model without a vocabulary ("no_vocab") takes ids only.
std::vector<TokenId> completion_prompt(const json& prompt, const vocab::Vocab& vocab, int32_t n_vocab) {
    auto tokens_of = [&](const json& arr) {
        std::vector<TokenId> ids;
        for (const auto& t : arr) {
            // Range-checked before narrowing: 4294967301 must not become token 5.
            if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
                throw bad_request("'prompt' token ids must be integers in 0.." + std::to_string(n_vocab - 1),
                                  "prompt");
            ids.push_back(static_cast<TokenId>(t.get<int64_t>()));
        }
        return ids;
    };
    if (prompt.is_string()) return vocab.tokenize(prompt.get<std::string>(), true, true);
    if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string())
        return vocab.tokenize(prompt[0].get<std::string>(), true, true);
    if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_array()) return tokens_of(prompt[0]);
    if (prompt.is_array() && !prompt.empty() && prompt[0].is_number()) return tokens_of(prompt);
    throw bad_request("'prompt' must be a string, one string in an array, or token ids (batches are not supported)",
                      "prompt");
}

}  // namespace

std::string base64_encode(const std::string& in) {
    static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
        out += table[v >> 18];
        out += table[(v >> 12) & 63];
        out += table[(v >> 6) & 63];
        out += table[v & 63];
    }
    if (i + 1 == in.size()) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16;
        out += table[v >> 18];
        out += table[(v >> 12) & 63];
        out += "==";
    } else if (i + 2 == in.size()) {
        const uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8);
        out += table[v >> 18];
        out += table[(v >> 12) & 63];
        out += table[(v >> 6) & 63];
        out += '=';
    }
    return out;
}

CompletionJob parse_openai_completion(const json& body, const vocab::Vocab& vocab, int32_t n_vocab,
                                      const sampling::SamplingParams& defaults) {
    CompletionJob job;
    job.model = requested_model(body, true);
    job.gen.max_tokens = 16;  // OpenAI's default for completions
    parse_openai_sampling(body, job.gen, false, defaults, &job.n_choices);
    if (!body.contains("prompt")) throw bad_request("'prompt' is required", "prompt");
    if (body["prompt"].is_object()) {
        // llama-server's multimodal prompt object.
        const json& p = body["prompt"];
        if (!p.contains("prompt_string") || !p["prompt_string"].is_string())
            throw bad_request("'prompt.prompt_string' must be a string", "prompt");
        job.media_prompt = true;
        job.prompt_string = p["prompt_string"].get<std::string>();
        if (p.contains("multimodal_data") && !p["multimodal_data"].is_null()) {
            const json& data = p["multimodal_data"];
            if (!data.is_array()) throw bad_request("'prompt.multimodal_data' must be an array of base64 strings", "prompt");
            if (data.size() > 16) throw bad_request("'prompt.multimodal_data' holds more than 16 images", "prompt");
            for (const json& item : data) {
                if (!item.is_string())
                    throw bad_request("'prompt.multimodal_data' must be an array of base64 strings", "prompt");
                auto bytes = decode_base64(item.get<std::string>());
                if (!bytes) throw bad_request("'prompt.multimodal_data' holds malformed base64", "prompt");
                job.image_bytes.push_back(std::move(*bytes));
            }
        }
    } else {
        job.gen.prompt = completion_prompt(body["prompt"], vocab, n_vocab);
    }
    if (body.contains("echo") && body["echo"].is_boolean() && body["echo"].get<bool>())
        throw bad_request("'echo' is not supported", "echo");
    job.stream = flag(body, "stream");
    if (body.contains("stream_options") && body["stream_options"].is_object())
        job.include_usage = body["stream_options"].value("include_usage", false);
    if (body.contains("logprobs") && !body["logprobs"].is_null()) {
        const json& lp = body["logprobs"];
        if (!lp.is_number_integer() || lp.get<int64_t>() < 0 || lp.get<int64_t>() > 5)
            throw bad_request("'logprobs' must be an integer 0..5", "logprobs");
        job.gen.top_logprobs = static_cast<int>(lp.get<int64_t>());
    }
    return job;
}

EmbeddingJob parse_openai_embeddings(const json& body, const vocab::Vocab& vocab, int32_t n_vocab) {
    EmbeddingJob job;
    job.model = requested_model(body, false);
    // llama-server's /embeddings also takes the text as "content".
    const char* field = body.contains("input") || !body.contains("content") ? "input" : "content";
    if (!body.contains(field)) throw bad_request("'input' is required", "input");
    job.content = std::string(field) == "content";
    const json& input = body[field];
    auto ids_of = [&](const json& arr) {
        std::vector<TokenId> ids;
        for (const auto& t : arr) {
            if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
                throw bad_request("'input' token ids must be integers in the vocabulary", "input");
            ids.push_back(t.get<TokenId>());
        }
        return ids;
    };
    if (input.is_string()) {
        job.inputs.push_back(vocab.tokenize(input.get<std::string>(), true, /*parse_special=*/true));
    } else if (input.is_array() && !input.empty() && input[0].is_number()) {
        job.inputs.push_back(ids_of(input));
    } else if (input.is_array() && !input.empty()) {
        for (const auto& item : input) {
            if (item.is_string()) job.inputs.push_back(vocab.tokenize(item.get<std::string>(), true, /*parse_special=*/true));
            else if (item.is_array()) job.inputs.push_back(ids_of(item));
            else throw bad_request("'input' must be a string, strings, or token arrays", "input");
        }
    } else {
        throw bad_request("'input' must be a non-empty string or array", "input");
    }
    if (job.inputs.size() > 256) throw bad_request("'input' holds more than 256 items", "input");
    for (const auto& in : job.inputs)
        if (in.empty()) throw bad_request("'input' must not be empty", "input");
    if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
        if (!body["encoding_format"].is_string())
            throw bad_request("'encoding_format' must be a string", "encoding_format");
        const std::string format = body["encoding_format"].get<std::string>();
        if (format != "float" && format != "base64")
            throw bad_request("'encoding_format' must be float or base64", "encoding_format");
        job.base64 = format == "base64";
    }
    if (body.contains("embd_normalize") && !body["embd_normalize"].is_null()) {
        const json& n = body["embd_normalize"];
        if (!n.is_number_integer() || n.get<int64_t>() < -1 || n.get<int64_t>() > 1000)
            throw bad_request("'embd_normalize' must be -1, 0, 1, 2 or p > 2", "embd_normalize");
        job.normalize = static_cast<int>(n.get<int64_t>());
    }
    return job;
}

json completion_logprobs_json(const std::vector<TokenLogprob>& lps, size_t offset) {
    json tokens = json::array(), lp = json::array(), top = json::array(), offs = json::array();
    for (const auto& l : lps) {
        tokens.push_back(l.token);
        lp.push_back(l.logprob);
        json t = json::object();
        for (const auto& x : l.top) t[x.token] = x.logprob;
        top.push_back(t);
        offs.push_back(offset);
        offset += l.token.size();
    }
    return json{{"tokens", tokens}, {"token_logprobs", lp}, {"top_logprobs", top}, {"text_offset", offs}};
}

json completion_body(const CompletionIds& ids, const std::string& text, const json& finish, const json& logprobs) {
    return json{{"id", ids.id},
                {"object", "text_completion"},
                {"created", ids.created},
                {"model", ids.model},
                {"system_fingerprint", "cria"},
                {"choices",
                 json::array({{{"text", text}, {"index", 0}, {"logprobs", logprobs}, {"finish_reason", finish}}})}};
}

json embedding_json(size_t index, const std::vector<float>& v, bool base64) {
    json item = {{"object", "embedding"}, {"index", index}};
    if (base64)
        item["embedding"] = base64_encode(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    else
        item["embedding"] = v;
    return item;
}

}  // namespace cria::server
