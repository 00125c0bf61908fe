#pragma once
// Request parsing shared by the OpenAI and Anthropic routes: both are turned
// into one ChatJob (OpenAI-style messages and tools plus generation
// settings), so templating, grammar and scheduling are written once.
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cria/server/scheduler.h"

namespace cria::server {

using json = nlohmann::ordered_json;

enum class Dialect { OpenAI, Anthropic };

// An error the client caused (or may be told about), with its HTTP status
// and the API's error type ("invalid_request_error", ...).
class ApiError : public std::runtime_error {
public:
    ApiError(int status, std::string type, const std::string& message, std::string param = {})
        : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)) {}
    int status() const { return status_; }
    const std::string& type() const { return type_; }
    const std::string& param() const { return param_; }

private:
    int status_;
    std::string type_;
    std::string param_;
};

ApiError bad_request(const std::string& message, const std::string& param = {});

// The error body each API documents:
//   OpenAI:    {"error": {"message", "type", "param", "code"}}
//   Anthropic: {"type": "error", "error": {"type", "message"}}
std::string error_body(Dialect dialect, int status, const std::string& type, const std::string& message,
                       const std::string& param = {});
// The Anthropic error type for an HTTP status (401 -> authentication_error, ...).
std::string anthropic_error_type(int status);
std::string openai_error_type(int status);

struct ChatJob {
    json messages = json::array();
    json tools;                      // null: none
    std::string tool_choice = "auto";  // auto | none | required | a function name
    bool parallel_tool_calls = false;  // one call per reply unless asked (as llama-server)
    json response_schema;            // JSON schema the reply must follow (null: free text)
    bool stream = false;
    bool include_usage = false;
    bool logprobs = false;
    std::string model;               // as the client named it ("" when absent)
    json template_kwargs;            // extra template variables (chat_template_kwargs)
    int32_t n_choices = 1;           // "n" (OpenAI chat only)
    // Images of the messages, in order: each stands where a media marker
    // (media::kDefaultMediaMarker) was put into its message's text.
    std::vector<std::vector<uint8_t>> image_bytes;
    std::vector<std::shared_ptr<const media::ImageChunk>> images;  // encoded (the server fills it)
    GenerationRequest gen;
};

// Most images one request may carry.
inline constexpr size_t kMaxImagesPerRequest = 16;

// Sampling and limit fields common to the OpenAI routes (temperature,
// top_p, seed, stop, max_tokens, penalties, logit_bias, llama.cpp extras).
// What the request leaves out comes from `defaults` (llama.cpp's unless the
// server was started with sampling flags), as llama-server does.
// `n_choices`: where "n" goes (1..kMaxChoices); null: the route serves n = 1 only.
void parse_openai_sampling(const json& body, GenerationRequest& gen, bool chat,
                           const sampling::SamplingParams& defaults = {}, int32_t* n_choices = nullptr);
inline constexpr int32_t kMaxChoices = 16;

ChatJob parse_openai_chat(const json& body, const sampling::SamplingParams& defaults = {});
ChatJob parse_anthropic_messages(const json& body, const sampling::SamplingParams& defaults = {});

// POST /v1/completions (OpenAI's legacy text completions).
struct CompletionJob {
    std::string model;  // as the client named it ("" when absent)
    GenerationRequest gen;
    // llama-server's multimodal prompt, {"prompt_string": "...<__media__>...",
    // "multimodal_data": ["<base64>", ...]}: the text and the decoded bytes
    // of its images (one per marker), which the server encodes and
    // tokenizes into `gen` (gen.prompt is then empty here).
    bool media_prompt = false;
    std::string prompt_string;
    std::vector<std::vector<uint8_t>> image_bytes;
    bool stream = false;
    bool include_usage = false;
    int32_t n_choices = 1;  // "n"
};
CompletionJob parse_openai_completion(const json& body, const vocab::Vocab& vocab, int32_t n_vocab,
                                      const sampling::SamplingParams& defaults = {});

// POST /v1/embeddings: one or more inputs (text or token ids of a vocabulary of n_vocab).
struct EmbeddingJob {
    std::string model;  // as the client named it ("" when absent)
    std::vector<std::vector<TokenId>> inputs;
    bool base64 = false;  // encoding_format
    int normalize = 2;    // embd_normalize (llama-server's; pooled rows only)
    bool content = false;  // the text came as "content": llama-server's non-OpenAI reply then
};
EmbeddingJob parse_openai_embeddings(const json& body, const vocab::Vocab& vocab, int32_t n_vocab);

// Body -> JSON object, or a 400 naming the problem.
json parse_body(const std::string& body);

// Request JSON may nest at most this deep: every later reader (templates,
// schemas, tool definitions, the serializer) recurses once per level.
inline constexpr int kMaxRequestJsonDepth = 128;
// json::parse that refuses nesting deeper than kMaxRequestJsonDepth
// (throws json::exception for bad JSON, cria::Error naming the limit for depth).
json parse_json_bounded(const std::string& text);

}  // namespace cria::server
