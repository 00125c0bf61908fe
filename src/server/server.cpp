// Routing, authentication, limits and the glue between HTTP and the scheduler.
#include "cria/server/server.h"

#include <cctype>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "api.h"
#include "bounded_http_server.h"
#include "chat_prompt.h"
#include "client_socket.h"
#include "cria/core/error.h"
#include "cria/core/version.h"
#include "cria/media/media_prompt.h"
#include "cria/runtime/embedding.h"
#include "cria/sampling/rng.h"
#include "cria/server/slot_files.h"
#include "memory_stream.h"
#include "metrics.h"
#include "native_completion.h"
#include "response_store.h"
#include "responses.h"
#include "responses_api.h"
#include "server/request_guard.h"
#include "served_model.h"
#include "sse.h"
#include "webui.h"

namespace cria::server {

namespace {

using Clock = std::chrono::steady_clock;

long long unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct Server::Impl {
    ServerConfig config;
    std::shared_ptr<ServedModel> single;    // one-model mode: served under any name
    std::shared_ptr<ModelRouter> router;    // router mode: models by name, loaded on demand
    std::unique_ptr<BoundedHttpServer> http;  // made by Server(), from the config
    std::thread thread;
    int port = 0;
    long long created = unix_now();
    std::atomic<uint64_t> http_requests{0};
    std::atomic<bool> stopped{false};
    std::unique_ptr<ResponseStore> response_store;  // made by Server(), from the config

    void send_json(httplib::Response& res, int status, const json& body) {
        res.status = status;
        res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json; charset=utf-8");
    }

    void send_error(httplib::Response& res, Dialect d, int status, const std::string& message,
                    const std::string& type = {}, const std::string& param = {}) {
        res.status = status;
        res.set_content(error_body(d, status, type, message, param), "application/json; charset=utf-8");
    }

    // The request's images through the projector, before the prompt is built.
    void encode_images(ChatJob& job) {
        if (job.image_bytes.empty()) return;
        if (!config.image_encoder)
            throw bad_request("this server takes no images: start it with a vision projector (--mmproj)", "messages");
        for (size_t i = 0; i < job.image_bytes.size(); ++i) {
            try {
                job.images.push_back(config.image_encoder->encode(job.image_bytes[i], "image " + std::to_string(i + 1)));
            } catch (const Error& e) {
                throw bad_request(e.what(), "messages");
            }
        }
        job.image_bytes.clear();
    }

    // llama-server's multimodal completion prompt: each marker of the text
    // takes the next image (the projector's delimiters around it), as
    // `cria run --image` builds it; the images' spans hold placeholders.
    void build_media_prompt(ServedModel& sm, CompletionJob& job) {
        if (!job.media_prompt) return;
        if (!job.image_bytes.empty() && !config.image_encoder)
            throw bad_request("this server takes no images: start it with a vision projector (--mmproj)", "prompt");
        std::vector<std::shared_ptr<const media::ImageChunk>> images;
        media::MediaPrompt mp;
        try {
            for (size_t i = 0; i < job.image_bytes.size(); ++i)
                images.push_back(config.image_encoder->encode(job.image_bytes[i], "image " + std::to_string(i + 1)));
            const media::ImageDelimiters delimiters =
                config.image_encoder ? config.image_encoder->delimiters() : media::ImageDelimiters{};
            mp = media::tokenize_media_prompt(sm.backend->vocab(), job.prompt_string, images, delimiters,
                                              media::kDefaultMediaMarker, true, false);
        } catch (const Error& e) {
            throw bad_request(e.what(), "prompt");
        }
        job.image_bytes.clear();
        job.gen.prompt.clear();
        job.gen.images.clear();
        for (const media::PromptChunk& c : mp.chunks) {
            if (!c.is_image()) {
                job.gen.prompt.insert(job.gen.prompt.end(), c.tokens.begin(), c.tokens.end());
                continue;
            }
            job.gen.images.push_back({job.gen.prompt.size(), c.image});
            job.gen.prompt.insert(job.gen.prompt.end(), static_cast<size_t>(c.image->n_tokens),
                                  image_placeholder(c.image->hash));
        }
    }

    // GET /v1/models/NAME: one of the listed names, or the file's name or stem.
    // (Generation requests are served whatever "model" they name, as llama-server
    // serves its one model.)
    void check_model_name(const std::string& requested) const {
        if (router) {
            if (!router->find(requested)) throw ApiError(404, "model_not_found", "The model `" + requested + "` does not exist");
            return;
        }
        if (std::find(single->names.begin(), single->names.end(), requested) != single->names.end()) return;
        const std::filesystem::path p(single->path);
        if (requested == p.filename().string() || requested == p.stem().string()) return;
        throw ApiError(404, "model_not_found", "The model `" + requested + "` does not exist");
    }

    // The model a request is served by. One model: that one, whatever the
    // request names. Router mode: the body's "model" (or ?model=), loaded
    // first when it is not; the lease keeps it loaded while the request runs.
    struct Use {
        std::shared_ptr<ModelRouter::Lease> lease;  // null with one model
        ServedModel* model = nullptr;
    };
    static std::string requested_model(const httplib::Request& req, const json* body) {
        if (body && body->is_object() && body->contains("model")) {
            const json& m = (*body)["model"];
            if (!m.is_string()) throw bad_request("'model' must be a string", "model");
            return m.get<std::string>();
        }
        return req.has_param("model") ? req.get_param_value("model") : std::string();
    }
    Use use_model(const httplib::Request& req, const json* body) {
        if (!router) return {nullptr, single.get()};
        const std::string name = requested_model(req, body);
        if (name.empty())
            throw bad_request("this server serves several models: name one with 'model' (GET /v1/models lists them)", "model");
        try {
            auto lease = router->acquire(name);
            auto* model = static_cast<ServedModel*>(&lease->model());
            return {std::move(lease), model};
        } catch (const ModelRouterError& e) {
            throw router_error(e);
        }
    }
    // What every text-generating endpoint starts with: the parsed body, the
    // model it names (leased in router mode), a refusal for encoders, and
    // the request's LoRA scales.
    struct GenerationUse {
        json body;
        Use use;
        std::vector<float> lora;
        ServedModel& model() const { return *use.model; }
    };
    GenerationUse use_generating_model(const httplib::Request& req) {
        GenerationUse g;
        g.body = parse_body(req.body);
        g.use = use_model(req, &g.body);
        if (!g.model().backend->generates_text())
            throw ApiError(501, "not_supported_error",
                           "this model is an encoder (embeddings and reranking): it does not generate text");
        g.lora = request_lora(g.model(), g.body);
        return g;
    }
    static ApiError router_error(const ModelRouterError& e) {
        switch (e.status()) {
            case 404: return ApiError(404, "model_not_found", e.what(), "model");
            case 400: return ApiError(400, "invalid_request_error", e.what(), "model");
            case 409: return ApiError(409, "invalid_request_error", e.what(), "model");
            default: return ApiError(e.status(), "server_error", e.what());
        }
    }

    // Runs a handler body, turning every failure into the API's error shape.
    template <typename F>
    void guarded(const httplib::Request& req, httplib::Response& res, F&& body) {
        const Dialect d = dialect_of(req.path);
        try {
            body();
        } catch (const ApiError& e) {
            send_error(res, d, e.status(), e.what(), e.type(), e.param());
        } catch (const QueueFull& e) {
            send_error(res, d, d == Dialect::Anthropic ? 529 : 503, e.what());
        } catch (const Error& e) {
            send_error(res, d, 400, e.what(), "invalid_request_error");
        } catch (const std::exception& e) {
            send_error(res, d, 500, std::string("internal error: ") + e.what());
        }
    }

    GenerationRequest& finish_request(GenerationRequest& gen) {
        gen.timeout = std::chrono::seconds(config.request_timeout_s);
        if (gen.max_tokens < 0) gen.max_tokens = config.default_max_tokens;
        if (!gen.n_keep) gen.n_keep = config.default_n_keep;
        return gen;
    }

    // Non-streaming responses write nothing until the end, so the scheduler
    // watches the client's socket instead: a client that hangs up frees its
    // slot at the next step. The guard stops the watching before the handler
    // returns (after which httplib closes the socket and its number may be reused).
    struct ClientWatch {
        std::shared_ptr<RequestHandle> handle;
        ~ClientWatch() {
            if (handle) handle->unwatch_client();
        }
    };
    ClientWatch watch_client(const httplib::Request& req, const std::shared_ptr<RequestHandle>& handle) {
        const int fd = find_client_socket(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
        if (fd < 0) return {};  // not found: only the timeout bounds the request
        handle->watch_client([fd] { return client_hung_up(fd); });
        return {handle};
    }

    // Waits for the whole generation (non-streaming responses).
    bool collect(const std::shared_ptr<RequestHandle>& handle, const chat::OutputParserOptions& popt, Collected& out,
                 GenerationEvent& error) {
        chat::StreamingOutputParser parser(popt);
        auto absorb = [&](const chat::OutputDelta& d) {
            out.reasoning += d.reasoning;
            out.content += d.content;
            out.calls.insert(out.calls.end(), d.tool_calls.begin(), d.tool_calls.end());
        };
        const auto hard_deadline = Clock::now() + std::chrono::seconds(config.request_timeout_s + 30);
        while (Clock::now() < hard_deadline && !stopped.load()) {
            auto ev = handle->pop(std::chrono::milliseconds(200));
            if (!ev) continue;
            if (ev->kind == GenerationEvent::Kind::Text) {
                absorb(parser.push(ev->text));
                out.logprobs.insert(out.logprobs.end(), ev->logprobs.begin(), ev->logprobs.end());
            } else if (ev->kind == GenerationEvent::Kind::Done) {
                absorb(parser.finish());
                out.finish_reason = ev->finish_reason;
                out.stop_word = ev->stop_word;
                out.usage = usage_of(*ev);
                return true;
            } else {
                error = std::move(*ev);
                return false;
            }
        }
        handle->cancel();
        error.error = "the request timed out";
        error.http_status = 504;
        return false;
    }

    // Streams events as SSE; `writer` turns one event into text to send and
    // says whether the stream is complete.
    using EventWriter = std::function<std::string(GenerationEvent&, bool& done)>;
    // `lease` keeps a router's model loaded until the stream ends.
    void stream(httplib::Response& res, std::shared_ptr<RequestHandle> handle, std::string first, EventWriter writer,
                std::shared_ptr<ModelRouter::Lease> lease = nullptr) {
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");
        auto pending_first = std::make_shared<std::string>(std::move(first));
        auto finished = std::make_shared<bool>(false);
        const auto hard_deadline = Clock::now() + std::chrono::seconds(config.request_timeout_s + 30);
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, handle, pending_first, finished, writer, hard_deadline, lease](size_t, httplib::DataSink& sink) {
                if (!pending_first->empty()) {
                    if (!sink.write(pending_first->data(), pending_first->size())) return false;
                    pending_first->clear();
                }
                if (*finished) {
                    if (lease) lease->release();
                    sink.done();
                    return true;
                }
                if (stopped.load() || Clock::now() > hard_deadline) return false;
                auto ev = handle->pop(std::chrono::milliseconds(100));
                if (!ev) return sink.is_writable();
                bool done = false;
                const std::string text = writer(*ev, done);
                if (!text.empty() && !sink.write(text.data(), text.size())) return false;
                if (done) {
                    *finished = true;
                    if (lease) lease->release();
                    sink.done();
                }
                return true;
            },
            [handle, lease](bool) {  // finished, or the client went away
                handle->cancel();
                if (lease) lease->release();
            });
    }

    // n > 1 choices of one prompt: the first request evaluates the prompt, the
    // others are submitted once it has (its first event), so the scheduler
    // lends them its cache cells instead of evaluating the prompt again.
    // Choice i samples with seed + i: each its own, reproducible stream
    // (a random seed stays random, drawn anew for each).
    std::vector<std::shared_ptr<RequestHandle>> submit_choices(ServedModel& sm, GenerationRequest gen, int32_t n) {
        std::vector<GenerationRequest> rest;
        const uint32_t seed = gen.sampling.seed;
        for (int32_t i = 1; i < n; ++i) {
            GenerationRequest g = gen;
            if (seed != sampling::kRandomSeed) {
                const uint32_t s = seed + static_cast<uint32_t>(i);
                g.sampling.seed = s == sampling::kRandomSeed ? 0 : s;
            }
            rest.push_back(std::move(g));
        }
        std::vector<std::shared_ptr<RequestHandle>> handles{sm.scheduler->submit(std::move(gen))};
        const auto deadline = Clock::now() + std::chrono::seconds(config.request_timeout_s);
        while (n > 1 && !handles[0]->wait_for_event(std::chrono::milliseconds(50)) && Clock::now() < deadline &&
               !stopped.load()) {
        }
        try {
            for (auto& g : rest) handles.push_back(sm.scheduler->submit(std::move(g)));
        } catch (...) {
            for (auto& h : handles) h->cancel();
            throw;
        }
        return handles;
    }

    // Streams the events of several choices as one SSE body: `writer(i, event,
    // done)` turns choice i's event into text, `tail()` ends the body once
    // every choice is done.
    using ChoiceWriter = std::function<std::string(size_t, GenerationEvent&, bool& done)>;
    void stream_choices(httplib::Response& res, std::vector<std::shared_ptr<RequestHandle>> handles, std::string first,
                        ChoiceWriter writer, std::function<std::string()> tail,
                        std::shared_ptr<ModelRouter::Lease> lease = nullptr) {
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");
        auto pending_first = std::make_shared<std::string>(std::move(first));
        auto finished = std::make_shared<std::vector<bool>>(handles.size(), false);
        auto ended = std::make_shared<bool>(false);
        const auto hard_deadline = Clock::now() + std::chrono::seconds(config.request_timeout_s + 30);
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, handles, pending_first, finished, ended, writer, tail, hard_deadline, lease](size_t, httplib::DataSink& sink) {
                if (!pending_first->empty()) {
                    if (!sink.write(pending_first->data(), pending_first->size())) return false;
                    pending_first->clear();
                }
                if (*ended) {
                    if (lease) lease->release();
                    sink.done();
                    return true;
                }
                if (stopped.load() || Clock::now() > hard_deadline) return false;
                std::string text;
                bool all_done = true;
                for (size_t i = 0; i < handles.size(); ++i) {
                    if ((*finished)[i]) continue;
                    all_done = false;
                    auto ev = handles[i]->pop(std::chrono::milliseconds(handles.size() > 1 ? 10 : 100));
                    if (!ev) continue;
                    bool done = false;
                    text += writer(i, *ev, done);
                    if (done) (*finished)[i] = true;
                }
                all_done = std::all_of(finished->begin(), finished->end(), [](bool f) { return f; });
                if (all_done) text += tail();
                if (!text.empty() && !sink.write(text.data(), text.size())) return false;
                if (all_done) {
                    *ended = true;
                    if (lease) lease->release();
                    sink.done();
                }
                return text.empty() ? sink.is_writable() : true;
            },
            [handles, lease](bool) {
                for (auto& h : handles) h->cancel();  // finished, or the client went away
                if (lease) lease->release();
            });
    }

    // POST /v1/chat/completions with n > 1 (OpenAI's shape: one choice per index).
    void chat_choices(const httplib::Request& req, httplib::Response& res, ChatJob& job,
                      const chat::OutputParserOptions& popt, const Use& use) {
        ServedModel& sm = *use.model;
        const int32_t n = job.n_choices;
        auto handles = submit_choices(sm, std::move(job.gen), n);
        const std::string id = random_id("chatcmpl-");
        const long long created_at = unix_now();
        if (!job.stream) {
            std::vector<ClientWatch> watches;
            for (auto& h : handles) watches.push_back(watch_client(req, h));
            json body;
            Usage total;
            for (size_t i = 0; i < handles.size(); ++i) {
                Collected c;
                GenerationEvent err;
                if (!collect(handles[i], popt, c, err)) {
                    for (auto& h : handles) h->cancel();
                    throw ApiError(err.http_status, "server_error", err.error);
                }
                json one = openai_chat_body(id, created_at, sm.model_id, c, job.logprobs);
                if (i == 0) {
                    body = one;
                    total = c.usage;
                } else {
                    one["choices"][0]["index"] = i;
                    body["choices"].push_back(one["choices"][0]);
                    total.completion += c.usage.completion;
                }
            }
            body["usage"] = usage_openai(total);
            send_json(res, 200, body);
            return;
        }
        std::vector<std::shared_ptr<OpenAIChatStream>> writers;
        std::vector<std::shared_ptr<chat::StreamingOutputParser>> parsers;
        std::string first;
        for (int32_t i = 0; i < n; ++i) {
            writers.push_back(std::make_shared<OpenAIChatStream>(id, created_at, sm.model_id, job.include_usage, job.logprobs, i));
            parsers.push_back(std::make_shared<chat::StreamingOutputParser>(popt));
            first += writers.back()->start();
        }
        auto total = std::make_shared<Usage>();
        stream_choices(
            res, handles, first,
            [writers, parsers, total](size_t i, GenerationEvent& ev, bool& done) -> std::string {
                if (ev.kind == GenerationEvent::Kind::Text) return writers[i]->delta(parsers[i]->push(ev.text), ev.logprobs);
                done = true;
                if (ev.kind == GenerationEvent::Kind::Error) return writers[i]->error(ev.http_status, ev.error);
                auto d = parsers[i]->finish();
                std::string out = writers[i]->delta(d, {});
                Collected c;
                c.calls = d.tool_calls;
                c.finish_reason = ev.finish_reason;
                c.usage = usage_of(ev);
                if (i == 0) {
                    const int32_t completion = total->completion;
                    *total = c.usage;
                    total->completion += completion;
                } else {
                    total->completion += c.usage.completion;
                }
                return out + writers[i]->finish_choice(c);
            },
            [writers, total] { return writers[0]->end(*total); }, use.lease);
    }

    void handle_chat(const httplib::Request& req, httplib::Response& res, Dialect dialect) {
        guarded(req, res, [&] {
            const GenerationUse g = use_generating_model(req);
            ServedModel& sm = g.model();
            ChatJob job = dialect == Dialect::Anthropic ? parse_anthropic_messages(g.body, config.default_sampling)
                                                         : parse_openai_chat(g.body, config.default_sampling);
            job.gen.lora = g.lora;
            encode_images(job);
            const chat::OutputParserOptions popt = sm.formatter->prepare(job);
            const std::vector<std::string> user_stops(job.gen.stop.begin(),
                                                      job.gen.stop.end() - (sm.formatter->is_default() ? 2 : 0));
            finish_request(job.gen);
            if (job.n_choices > 1) {
                chat_choices(req, res, job, popt, g.use);
                return;
            }
            const int32_t n_prompt = static_cast<int32_t>(job.gen.prompt.size());
            auto handle = sm.scheduler->submit(std::move(job.gen));
            const std::string& model = sm.model_id;  // llama-server names its model, not the request's name
            const long long created_at = unix_now();
            if (!job.stream) {
                const ClientWatch watch = watch_client(req, handle);
                Collected c;
                GenerationEvent err;
                if (!collect(handle, popt, c, err)) throw ApiError(err.http_status, "server_error", err.error);
                if (dialect == Dialect::Anthropic)
                    send_json(res, 200, anthropic_message_body(random_id("msg_"), model, c, user_stops));
                else
                    send_json(res, 200, openai_chat_body(random_id("chatcmpl-"), created_at, model, c, job.logprobs));
                return;
            }
            auto parser = std::make_shared<chat::StreamingOutputParser>(popt);
            auto collected = std::make_shared<Collected>();
            if (dialect == Dialect::Anthropic) {
                auto w = std::make_shared<AnthropicStream>(random_id("msg_"), model, user_stops);
                std::string first = w->start(n_prompt);
                stream(res, handle, first, [w, parser, collected](GenerationEvent& ev, bool& done) {
                    if (ev.kind == GenerationEvent::Kind::Text) return w->delta(parser->push(ev.text));
                    done = true;
                    if (ev.kind == GenerationEvent::Kind::Error) return w->error(ev.http_status, ev.error);
                    auto d = parser->finish();
                    std::string out = w->delta(d);
                    collected->calls = d.tool_calls;
                    collected->finish_reason = ev.finish_reason;
                    collected->stop_word = ev.stop_word;
                    collected->usage = usage_of(ev);
                    return out + w->finish(*collected);
                }, g.use.lease);
            } else {
                auto w = std::make_shared<OpenAIChatStream>(random_id("chatcmpl-"), created_at, model,
                                                            job.include_usage, job.logprobs);
                std::string first = w->start();
                stream(res, handle, first, [w, parser, collected](GenerationEvent& ev, bool& done) {
                    if (ev.kind == GenerationEvent::Kind::Text) {
                        auto d = parser->push(ev.text);
                        collected->calls.insert(collected->calls.end(), d.tool_calls.begin(), d.tool_calls.end());
                        return w->delta(d, ev.logprobs);
                    }
                    done = true;
                    if (ev.kind == GenerationEvent::Kind::Error) return w->error(ev.http_status, ev.error);
                    auto d = parser->finish();
                    collected->calls.insert(collected->calls.end(), d.tool_calls.begin(), d.tool_calls.end());
                    std::string out = w->delta(d, {});
                    collected->finish_reason = ev.finish_reason;
                    collected->usage = usage_of(ev);
                    return out + w->finish(*collected);
                }, g.use.lease);
            }
        });
    }

    // POST /v1/responses: a chat completion underneath; the reply is kept
    // (unless store is false) so that a later request can continue it.
    void handle_responses(const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const GenerationUse g = use_generating_model(req);
            ServedModel& sm = g.model();
            ResponsesJob job = parse_openai_responses(
                g.body, [this](const std::string& id) { return response_store->get(id); }, config.default_sampling);
            job.chat.gen.lora = g.lora;
            const chat::OutputParserOptions popt = sm.formatter->prepare(job.chat);
            finish_request(job.chat.gen);
            auto handle = sm.scheduler->submit(std::move(job.chat.gen));
            const ResponseIds ids{random_id("resp_"), unix_now(), sm.model_id};
            auto keep = [this, ids, store = job.store, conversation = job.conversation](const Collected& c) mutable {
                if (!store) return;
                conversation.push_back(response_reply_message(c));
                response_store->put(ids.id, conversation);
            };
            if (!job.chat.stream) {
                const ClientWatch watch = watch_client(req, handle);
                Collected c;
                GenerationEvent err;
                if (!collect(handle, popt, c, err)) throw ApiError(err.http_status, "server_error", err.error);
                name_tool_calls(c.calls);
                keep(c);
                send_json(res, 200, response_object(ids, job.echo, response_status(c), response_output_items(c), &c.usage));
                return;
            }
            auto parser = std::make_shared<chat::StreamingOutputParser>(popt);
            auto collected = std::make_shared<Collected>();
            auto w = std::make_shared<ResponsesStream>(ids, job.echo);
            stream(res, handle, w->start(), [w, parser, collected, keep](GenerationEvent& ev, bool& done) mutable {
                if (ev.kind == GenerationEvent::Kind::Text) return w->delta(parser->push(ev.text), *collected);
                done = true;
                if (ev.kind == GenerationEvent::Kind::Error) return w->error(ev.http_status, ev.error);
                std::string out = w->delta(parser->finish(), *collected);
                collected->finish_reason = ev.finish_reason;
                collected->usage = usage_of(ev);
                keep(*collected);
                return out + w->finish(*collected);
            }, g.use.lease);
        });
    }

    // Waits for the raw text of a generation (completions are not parsed
    // for reasoning or tools); throws ApiError for an error or the timeout.
    std::string collect_text(const std::shared_ptr<RequestHandle>& handle, Collected& c) {
        std::string text;
        const auto hard_deadline = Clock::now() + std::chrono::seconds(config.request_timeout_s + 30);
        for (;;) {
            if (Clock::now() > hard_deadline) {
                handle->cancel();
                throw ApiError(504, "server_error", "the request timed out");
            }
            auto ev = handle->pop(std::chrono::milliseconds(200));
            if (!ev) continue;
            if (ev->kind == GenerationEvent::Kind::Text) {
                text += ev->text;
                c.logprobs.insert(c.logprobs.end(), ev->logprobs.begin(), ev->logprobs.end());
                continue;
            }
            if (ev->kind == GenerationEvent::Kind::Error) throw ApiError(ev->http_status, "server_error", ev->error);
            c.finish_reason = ev->finish_reason;
            c.stop_word = ev->stop_word;
            c.slot = ev->slot;
            c.context_shifted = ev->context_shifted;
            c.n_cells = ev->n_cells;
            c.usage = usage_of(*ev);
            return text;
        }
    }

    void handle_completions(const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const GenerationUse g = use_generating_model(req);
            ServedModel& sm = g.model();
            CompletionJob job =
                parse_openai_completion(g.body, sm.backend->vocab(), sm.backend->n_vocab(), config.default_sampling);
            job.gen.lora = g.lora;
            build_media_prompt(sm, job);
            const bool want_logprobs = job.gen.top_logprobs >= 0, include_usage = job.include_usage;
            finish_request(job.gen);
            if (job.n_choices > 1) {
                completion_choices(req, res, job, want_logprobs, g.use);
                return;
            }
            auto handle = sm.scheduler->submit(std::move(job.gen));
            const CompletionIds ids{random_id("cmpl-"), unix_now(), sm.model_id};
            if (!job.stream) {
                const ClientWatch watch = watch_client(req, handle);
                Collected c;
                const std::string text = collect_text(handle, c);
                json out = completion_body(ids, text, c.finish_reason == "length" ? "length" : "stop",
                                           want_logprobs ? completion_logprobs_json(c.logprobs, 0) : json());
                out["usage"] = usage_openai(c.usage);
                out["timings"] = timings_json(c.usage);
                send_json(res, 200, out);
                return;
            }
            auto offset = std::make_shared<size_t>(0);
            stream(res, handle, "", [=](GenerationEvent& ev, bool& done) -> std::string {
                auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
                if (ev.kind == GenerationEvent::Kind::Text) {
                    json lps = want_logprobs ? completion_logprobs_json(ev.logprobs, *offset) : json();
                    *offset += ev.text.size();
                    return sse_event(dump(completion_body(ids, ev.text, nullptr, lps)));
                }
                done = true;
                if (ev.kind == GenerationEvent::Kind::Error)
                    return sse_event(error_body(Dialect::OpenAI, ev.http_status, "", ev.error));
                Usage u = usage_of(ev);
                json last = completion_body(ids, "", ev.finish_reason == "length" ? "length" : "stop", nullptr);
                last["timings"] = timings_json(u);
                std::string out = sse_event(dump(last));
                if (include_usage) {
                    json uj = completion_body(ids, "", nullptr, nullptr);
                    uj["choices"] = json::array();
                    uj["usage"] = usage_openai(u);
                    out += sse_event(dump(uj));
                }
                return out + sse_event("[DONE]");
            }, g.use.lease);
        });
    }

    // POST /completion and /completions: llama-server's native completion API.
    // Each prompt of the request is one scheduler request (as n > 1 choices);
    // a list of prompts gives a list of results (or interleaved SSE objects,
    // told apart by "index").
    void handle_native_completion(const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const GenerationUse g = use_generating_model(req);
            ServedModel& sm = g.model();
            NativeCompletionJob job =
                parse_native_completion(g.body, sm.backend->vocab(), sm.backend->n_vocab(), config.default_sampling);
            job.gen.lora = g.lora;
            finish_request(job.gen);
            const json settings = native_generation_settings(job.gen, job.stream, job.n_probs);
            std::vector<std::string> prompt_texts;
            std::vector<size_t> prompt_sizes;
            std::vector<std::shared_ptr<RequestHandle>> handles;
            try {
                for (auto& prompt : job.prompts) {
                    // As llama-server's "prompt": control tokens (the BOS) shown as their text.
                    prompt_texts.push_back(sm.backend->vocab().detokenize(prompt, {.unparse_special = true}));
                    prompt_sizes.push_back(prompt.size());
                    GenerationRequest gen = job.gen;
                    gen.prompt = std::move(prompt);
                    handles.push_back(sm.scheduler->submit(std::move(gen)));
                }
            } catch (...) {
                for (auto& h : handles) h->cancel();
                throw;
            }
            const bool return_tokens = job.return_tokens;
            const int32_t n_probs = job.n_probs;
            auto ids_of = [return_tokens](const std::vector<TokenLogprob>& lps) {
                std::vector<TokenId> ids;
                if (return_tokens)
                    for (const auto& l : lps) ids.push_back(l.id);
                return ids;
            };
            if (!job.stream) {
                std::vector<ClientWatch> watches;
                for (auto& h : handles) watches.push_back(watch_client(req, h));
                json results = json::array();
                for (size_t i = 0; i < handles.size(); ++i) {
                    Collected c;
                    NativeFinal f;
                    try {
                        f.content = collect_text(handles[i], c);
                    } catch (...) {
                        for (auto& h : handles) h->cancel();
                        throw;
                    }
                    f.index = i;
                    f.tokens = ids_of(c.logprobs);
                    f.model = sm.model_id;
                    f.prompt = prompt_texts[i];
                    f.finish_reason = c.finish_reason;
                    f.stop_word = c.stop_word;
                    f.slot = c.slot;
                    f.truncated = c.context_shifted;
                    f.tokens_cached = c.n_cells;
                    f.usage = c.usage;
                    json one = native_final_json(f, settings);
                    if (n_probs > 0) one["completion_probabilities"] = native_probabilities(c.logprobs);
                    results.push_back(std::move(one));
                }
                send_json(res, 200, results.size() == 1 ? results[0] : results);
                return;
            }
            auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
            auto prompts = std::make_shared<std::vector<std::string>>(std::move(prompt_texts));
            const std::string model = sm.model_id;
            stream_choices(
                res, handles, "",
                [=](size_t i, GenerationEvent& ev, bool& done) -> std::string {
                    if (ev.kind == GenerationEvent::Kind::Text) {
                        json part = native_partial_json(i, ev.text, ids_of(ev.logprobs), prompt_sizes[i]);
                        if (n_probs > 0) part["completion_probabilities"] = native_probabilities(ev.logprobs);
                        return sse_event(dump(part));
                    }
                    done = true;
                    if (ev.kind == GenerationEvent::Kind::Error)
                        return sse_event(error_body(Dialect::OpenAI, ev.http_status, "", ev.error));
                    NativeFinal f;
                    f.index = i;
                    f.model = model;
                    f.prompt = (*prompts)[i];
                    f.finish_reason = ev.finish_reason;
                    f.stop_word = ev.stop_word;
                    f.slot = ev.slot;
                    f.truncated = ev.context_shifted;
                    f.tokens_cached = ev.n_cells;
                    f.usage = usage_of(ev);
                    return sse_event(dump(native_final_json(f, settings)));
                },
                // llama-server ends the native stream with the last object (no [DONE]).
                []() { return std::string(); }, g.use.lease);
        });
    }

    // POST /v1/completions with n > 1: one choice per index, as OpenAI.
    void completion_choices(const httplib::Request& req, httplib::Response& res, CompletionJob& job, bool want_logprobs,
                            const Use& use) {
        ServedModel& sm = *use.model;
        const int32_t n = job.n_choices;
        const bool include_usage = job.include_usage;
        auto handles = submit_choices(sm, std::move(job.gen), n);
        const CompletionIds ids{random_id("cmpl-"), unix_now(), sm.model_id};
        auto with_index = [](json body, size_t i) {
            body["choices"][0]["index"] = i;
            return body;
        };
        if (!job.stream) {
            std::vector<ClientWatch> watches;
            for (auto& h : handles) watches.push_back(watch_client(req, h));
            json out;
            Usage total;
            for (size_t i = 0; i < handles.size(); ++i) {
                Collected c;
                std::string text;
                try {
                    text = collect_text(handles[i], c);
                } catch (...) {
                    for (auto& h : handles) h->cancel();
                    throw;
                }
                json one = with_index(completion_body(ids, text, c.finish_reason == "length" ? "length" : "stop",
                                                      want_logprobs ? completion_logprobs_json(c.logprobs, 0) : json()),
                                      i);
                if (i == 0) {
                    out = one;
                    total = c.usage;
                    out["timings"] = timings_json(c.usage);
                } else {
                    out["choices"].push_back(one["choices"][0]);
                    total.completion += c.usage.completion;
                }
            }
            out["usage"] = usage_openai(total);
            send_json(res, 200, out);
            return;
        }
        auto offsets = std::make_shared<std::vector<size_t>>(handles.size(), 0);
        auto total = std::make_shared<Usage>();
        auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
        stream_choices(
            res, handles, "",
            [=](size_t i, GenerationEvent& ev, bool& done) -> std::string {
                if (ev.kind == GenerationEvent::Kind::Text) {
                    json lps = want_logprobs ? completion_logprobs_json(ev.logprobs, (*offsets)[i]) : json();
                    (*offsets)[i] += ev.text.size();
                    return sse_event(dump(with_index(completion_body(ids, ev.text, nullptr, lps), i)));
                }
                done = true;
                if (ev.kind == GenerationEvent::Kind::Error)
                    return sse_event(error_body(Dialect::OpenAI, ev.http_status, "", ev.error));
                const Usage u = usage_of(ev);
                if (i == 0) {
                    const int32_t completion = total->completion;
                    *total = u;
                    total->completion += completion;
                } else {
                    total->completion += u.completion;
                }
                json last = with_index(completion_body(ids, "", ev.finish_reason == "length" ? "length" : "stop", nullptr), i);
                last["timings"] = timings_json(u);
                return sse_event(dump(last));
            },
            [=]() -> std::string {
                std::string out;
                if (include_usage) {
                    json uj = completion_body(ids, "", nullptr, nullptr);
                    uj["choices"] = json::array();
                    uj["usage"] = usage_openai(*total);
                    out += sse_event(dump(uj));
                }
                return out + sse_event("[DONE]");
            }, use.lease);
    }

    // oai: /v1/embeddings (OpenAI's list); otherwise llama-server's
    // /embeddings: [{"index", "embedding": [[row], ...]}], a row per token
    // under pooling none, else the pooled row.
    void handle_embeddings(const httplib::Request& req, httplib::Response& res, bool oai) {
        guarded(req, res, [&] {
            const json body = parse_body(req.body);
            const Use use = use_model(req, &body);
            ServedModel& sm = *use.model;
            const EmbeddingJob job = parse_openai_embeddings(body, sm.backend->vocab(), sm.backend->n_vocab());
            oai = oai && !job.content;  // llama-server: "content" is not OpenAI's, so neither is the reply
            json data = json::array();
            int64_t n_tokens = 0;
            for (size_t i = 0; i < job.inputs.size(); ++i) {
                if (job.inputs[i].size() > static_cast<size_t>(sm.backend->max_embedding_tokens()))
                    throw bad_request("input " + std::to_string(i) + " has " + std::to_string(job.inputs[i].size()) +
                                      " tokens, more than the " + std::to_string(sm.backend->max_embedding_tokens()) +
                                      " this model embeds at once", "input");
                std::vector<std::vector<float>> rows;
                try {
                    if (oai) {
                        rows.push_back(sm.backend->embed(job.inputs[i]));
                        runtime::normalize_embedding(rows.back(), job.normalize);
                    } else {
                        rows = sm.backend->embed_rows(job.inputs[i]);
                        // Pooled: one row, normalised; per token (pooling none): as computed.
                        if (!sm.backend->embeds_per_token()) runtime::normalize_embedding(rows.front(), job.normalize);
                    }
                } catch (const Error& e) {
                    throw ApiError(501, "not_supported_error", e.what());
                }
                n_tokens += static_cast<int64_t>(job.inputs[i].size());
                if (oai)
                    data.push_back(embedding_json(i, rows.front(), job.base64));
                else
                    data.push_back({{"index", i}, {"embedding", rows}});
            }
            if (!oai) return send_json(res, 200, data);
            // llama-server echoes the request's model name here (not in completions).
            send_json(res, 200, {{"object", "list"}, {"data", data}, {"model", job.model.empty() ? sm.model_id : job.model},
                                 {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}});
        });
    }

    // POST /v1/rerank (/rerank, /v1/reranking, /reranking), llama-server's
    // shapes: {"query", "documents" | "texts" (TEI), "top_n"}; results sorted
    // by relevance, at most top_n: [{"index", "relevance_score"}] in a list
    // object, or TEI's bare [{"index", "score"}] when the request had "texts"
    // (with "text" when return_text).
    void handle_rerank(const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const json body = parse_body(req.body);
            const Use use = use_model(req, &body);
            ServedModel& sm = *use.model;
            if (!body.contains("query") || !body["query"].is_string())
                throw bad_request("'query' must be a string", "query");
            // llama-server: TEI's reply shape whenever "texts" is sent, the
            // documents from "documents" when both are.
            const bool tei = body.contains("texts");
            const json& docs = body.contains("documents") ? body["documents"] : tei ? body["texts"] : json();
            if (!docs.is_array() || docs.empty())
                throw bad_request("'documents' must be a non-empty array of strings", "documents");
            std::vector<std::string> documents;
            for (const auto& d : docs) {
                if (!d.is_string()) throw bad_request("'documents' must be strings", "documents");
                documents.push_back(d.get<std::string>());
            }
            size_t top_n = documents.size();
            if (body.contains("top_n") && !body["top_n"].is_null()) {
                if (!body["top_n"].is_number_integer() || body["top_n"].get<int64_t>() < 0)
                    throw bad_request("'top_n' must be a non-negative integer", "top_n");
                top_n = std::min<size_t>(top_n, body["top_n"].get<size_t>());
            }
            const bool return_text = tei && body.value("return_text", false);
            int64_t n_tokens = 0;
            std::vector<float> scores;
            try {
                scores = sm.backend->rerank(body["query"].get<std::string>(), documents, n_tokens);
            } catch (const Error& e) {
                throw ApiError(501, "not_supported_error", e.what());
            }
            std::vector<size_t> order(scores.size());
            for (size_t i = 0; i < order.size(); ++i) order[i] = i;
            std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
            order.resize(top_n);
            json results = json::array();
            for (size_t i : order) {
                json r = {{"index", i}, {tei ? "score" : "relevance_score", scores[i]}};
                if (return_text) r["text"] = documents[i];
                results.push_back(r);
            }
            if (tei) return send_json(res, 200, results);
            const bool named = body.contains("model") && body["model"].is_string();
            send_json(res, 200, {{"model", named ? body["model"].get<std::string>() : sm.model_id}, {"object", "list"},
                                 {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}},
                                 {"results", results}});
        });
    }

    json model_json(const std::string& name) const {
        if (router) {
            const ModelEntry* entry = router->find(name);
            for (const auto& st : router->status())
                if (entry && st.entry.name == entry->name) return router_model_json(st, name);
        }
        return {{"id", name}, {"object", "model"}, {"created", created}, {"owned_by", "cria"},
                {"meta", {{"n_vocab", single->backend->n_vocab()}, {"n_ctx", single->backend->n_ctx_per_seq()}}}};
    }
    // A router's model as llama-server's router lists it: "status": {"value":
    // "unloaded" | "loading" | "loaded"}, and a failed load as "unloaded" with
    // "failed": true (and cria's "error": why).
    json router_model_json(const ModelRouter::ModelStatus& st, const std::string& id) const {
        json status = {{"value", st.state == ModelState::Failed ? "unloaded" : std::string(model_state_name(st.state))}};
        if (st.state == ModelState::Failed) {
            status["failed"] = true;
            status["error"] = st.error;
        }
        return {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "cria"}, {"in_cache", false},
                {"path", st.entry.path}, {"aliases", st.entry.aliases}, {"status", status}};
    }
    json models_json() const {
        json data = json::array();
        if (router) {
            for (const auto& st : router->status()) data.push_back(router_model_json(st, st.entry.name));
        } else {
            for (const auto& name : single->names) data.push_back(model_json(name));
        }
        return {{"object", "list"}, {"data", data}};
    }

    // /props: what a request that sets nothing gets (llama-server's names).
    json default_params_json() const {
        const auto& d = config.default_sampling;
        return {{"temperature", d.temp}, {"top_k", d.top_k}, {"top_p", d.top_p}, {"min_p", d.min_p},
                {"typical_p", d.typ_p}, {"top_n_sigma", d.top_n_sigma}, {"xtc_probability", d.xtc_probability},
                {"xtc_threshold", d.xtc_threshold}, {"dynatemp_range", d.dynatemp_range},
                {"dynatemp_exponent", d.dynatemp_exponent}, {"repeat_last_n", d.penalty_last_n},
                {"repeat_penalty", d.penalty_repeat}, {"presence_penalty", d.penalty_present},
                {"frequency_penalty", d.penalty_freq}, {"dry_multiplier", d.dry_multiplier}, {"dry_base", d.dry_base},
                {"dry_allowed_length", d.dry_allowed_length}, {"dry_penalty_last_n", d.dry_penalty_last_n},
                {"dry_sequence_breakers", d.dry_sequence_breakers}, {"mirostat", d.mirostat},
                {"mirostat_tau", d.mirostat_tau}, {"mirostat_eta", d.mirostat_eta}, {"ignore_eos", d.ignore_eos},
                {"samplers", json(sampling::samplers_to_names(d.samplers))}, {"seed", d.seed},
                {"max_tokens", config.default_max_tokens}, {"n_keep", config.default_n_keep}, {"n_discard", 0}};
    }

    // The HTTP server, its limits and routes (both constructors).
    void start_http();
    // The routes (below), in four groups.
    void routes();
    void error_handlers();
    void api_routes();
    void tool_routes();
    void slot_routes();
    void lora_routes();

    // llama-server's per-request "lora": [{"id", "scale"}] (its
    // parse_lora_request / construct_lora_list): a non-empty list gives every
    // adapter a scale, those it does not name 0; no list, or an empty one,
    // leaves the server's scales (an empty vector). The scheduler decodes
    // requests under different scales in batches of their own.
    std::vector<float> request_lora(ServedModel& sm, const json& body) const {
        if (!body.is_object() || !body.contains("lora")) return {};
        const json& list = body["lora"];
        if (!list.is_array()) throw bad_request("'lora' must be an array of {\"id\", \"scale\"}", "lora");
        if (list.empty()) return {};
        std::vector<float> scales(sm.backend->lora_adapters().size(), 0.0f);
        for (const json& e : list) {
            if (!e.is_object() || !e.contains("id") || !e["id"].is_number_integer() || !e.contains("scale") ||
                !e["scale"].is_number())
                throw bad_request("'lora' entries must be {\"id\": integer, \"scale\": number}", "lora");
            const auto id = e["id"].get<int64_t>();
            if (id < 0 || id >= static_cast<int64_t>(scales.size()))
                throw bad_request("'lora': no adapter with id " + std::to_string(id), "lora");
            const double scale = e["scale"].get<double>();
            if (!std::isfinite(scale) || std::fabs(scale) > 1e6) throw bad_request("'lora': the scale must be a finite number", "lora");
            scales[static_cast<size_t>(id)] = static_cast<float>(scale);
        }
        return scales;
    }
};

void Server::Impl::routes() {
    error_handlers();
    api_routes();
    tool_routes();
    slot_routes();
    lora_routes();
}

// The request checks before routing (request_guard.h), and the API's error shape for HTTP errors and escaped exceptions.
void Server::Impl::error_handlers() {
    http->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        ++http_requests;
        const RequestGuard guard{config.host, port, config.cors_origin, config.api_key, config.max_body_bytes};
        return refused_before_routing(guard, req, res) ? httplib::Server::HandlerResponse::Handled
                                                       : httplib::Server::HandlerResponse::Unhandled;
    });
    http->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        const Dialect d = dialect_of(req.path);
        switch (res.status) {
            case 404: send_error(res, d, 404, "no route for " + req.method + " " + req.path, d == Dialect::OpenAI ? "not_found_error" : ""); break;
            case 413: send_error(res, d, 413, "the request body is larger than " + std::to_string(config.max_body_bytes) + " bytes"); break;
            case 400: send_error(res, d, 400, "malformed HTTP request", "invalid_request_error"); break;
            default: send_error(res, d, res.status, "HTTP error " + std::to_string(res.status)); break;
        }
    });
    http->set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        send_error(res, dialect_of(req.path), 500, "internal error: " + what);
    });
}

// Models, chat, completions and embeddings (OpenAI and Anthropic).
void Server::Impl::api_routes() {
    http->Get("/health", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            json out = {{"status", "ok"}};
            // Router mode, ?model=NAME: that model's load state too (nothing is loaded for it).
            if (router && req.has_param("model")) {
                const std::string name = req.get_param_value("model");
                const ModelEntry* entry = router->find(name);
                if (!entry) throw ApiError(404, "model_not_found", "The model `" + name + "` does not exist", "model");
                for (const auto& st : router->status())
                    if (st.entry.name == entry->name) out["model_status"] = router_model_json(st, entry->name)["status"];
            }
            send_json(res, 200, out);
        });
    });
    // Router mode: load or unload a model by name (llama-server's routes and replies).
    auto model_action = [this](const httplib::Request& req, httplib::Response& res, bool load) {
        guarded(req, res, [&] {
            if (!router)
                throw ApiError(501, "not_supported_error",
                               "this server serves one model: start it with --models-dir or --models-preset to load "
                               "and unload models");
            const json body = parse_body(req.body);
            const std::string name = requested_model(req, &body);
            if (name.empty()) throw bad_request("'model' is required", "model");
            try {
                if (load) router->load(name);
                else router->unload(name);
            } catch (const ModelRouterError& e) {
                throw router_error(e);
            }
            send_json(res, 200, {{"success", true}});
        });
    };
    http->Post("/models/load", [model_action](const httplib::Request& req, httplib::Response& res) { model_action(req, res, true); });
    http->Post("/models/unload", [model_action](const httplib::Request& req, httplib::Response& res) { model_action(req, res, false); });
    http->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) { send_json(res, 200, models_json()); });
    http->Get("/models", [this](const httplib::Request&, httplib::Response& res) { send_json(res, 200, models_json()); });
    http->Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const std::string name = req.matches[1].str();
            check_model_name(name);
            send_json(res, 200, model_json(name));
        });
    });
    http->Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { handle_chat(req, res, Dialect::OpenAI); });
    http->Post("/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { handle_chat(req, res, Dialect::OpenAI); });
    http->Post("/v1/messages", [this](const httplib::Request& req, httplib::Response& res) { handle_chat(req, res, Dialect::Anthropic); });
    http->Post("/v1/messages/count_tokens", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            json body = parse_body(req.body);
            const Use use = use_model(req, &body);
            ServedModel& sm = *use.model;
            if (!body.contains("max_tokens")) body["max_tokens"] = 1;
            ChatJob job = parse_anthropic_messages(body);
            encode_images(job);
            sm.formatter->prepare(job);
            send_json(res, 200, {{"input_tokens", job.gen.prompt.size()}});
        });
    });
    http->Post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) { handle_responses(req, res); });
    http->Post("/responses", [this](const httplib::Request& req, httplib::Response& res) { handle_responses(req, res); });
    http->Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { handle_completions(req, res); });
    // llama-server's native API (its /v1/completions is OpenAI's, above).
    http->Post("/completion", [this](const httplib::Request& req, httplib::Response& res) { handle_native_completion(req, res); });
    http->Post("/completions", [this](const httplib::Request& req, httplib::Response& res) { handle_native_completion(req, res); });
    http->Post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) { handle_embeddings(req, res, true); });
    http->Post("/embeddings", [this](const httplib::Request& req, httplib::Response& res) { handle_embeddings(req, res, false); });
    for (const char* path : {"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"})
        http->Post(path, [this](const httplib::Request& req, httplib::Response& res) { handle_rerank(req, res); });
}

// llama-server's extras: tokenizer, template, properties, metrics.
void Server::Impl::tool_routes() {
    http->Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const json body = parse_body(req.body);
            const Use use = use_model(req, &body);
            ServedModel& sm = *use.model;
            if (!body.contains("content") || !body["content"].is_string()) throw bad_request("'content' must be a string", "content");
            const bool add_special = body.contains("add_special") && body["add_special"].is_boolean() && body["add_special"].get<bool>();
            const bool parse_special = !body.contains("parse_special") || !body["parse_special"].is_boolean() || body["parse_special"].get<bool>();
            const bool with_pieces = body.contains("with_pieces") && body["with_pieces"].is_boolean() && body["with_pieces"].get<bool>();
            const auto ids = sm.backend->vocab().tokenize(body["content"].get<std::string>(), add_special, parse_special);
            json tokens = json::array();
            for (TokenId id : ids) {
                if (with_pieces) tokens.push_back({{"id", id}, {"piece", sm.backend->vocab().token_to_piece(id)}});
                else tokens.push_back(id);
            }
            send_json(res, 200, {{"tokens", tokens}});
        });
    });
    http->Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const json body = parse_body(req.body);
            const Use use = use_model(req, &body);
            ServedModel& sm = *use.model;
            if (!body.contains("tokens") || !body["tokens"].is_array()) throw bad_request("'tokens' must be an array", "tokens");
            std::vector<TokenId> ids;
            for (const auto& t : body["tokens"]) {
                if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= sm.backend->n_vocab())
                    throw bad_request("'tokens' must hold token ids of this vocabulary", "tokens");
                ids.push_back(t.get<TokenId>());
            }
            send_json(res, 200, {{"content", sm.backend->vocab().detokenize(ids)}});
        });
    });
    http->Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const json body = parse_body(req.body);
            const Use use = use_model(req, &body);
            ServedModel& sm = *use.model;
            const ChatJob job = parse_openai_chat(body);
            send_json(res, 200, {{"prompt", sm.formatter->render(job.messages, job.tools, true, job.template_kwargs)}});
        });
    });
    http->Get("/props", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
        // A router without ?model= describes itself (llama-server's router says "role": "router").
        if (router && !req.has_param("model")) {
            send_json(res, 200, {{"role", "router"},
                                 {"models", router->models().size()},
                                 {"build_info", std::string("cria ") + cria::version_string() + " (" + cria::git_commit() + ")"},
                                 {"endpoint_slots", true},
                                 {"endpoint_metrics", config.metrics}});
            return;
        }
        const Use use = use_model(req, nullptr);
        ServedModel& sm = *use.model;
        const auto& o = sm.scheduler->options();
        send_json(res, 200, {{"default_generation_settings", {{"n_ctx", sm.backend->n_ctx_per_seq()}, {"params", default_params_json()}}},
                             {"total_slots", o.n_slots},
                             {"model_alias", sm.model_id},
                             {"model_path", sm.path},
                             {"model_name", sm.backend->model_name()},
                             {"chat_template", sm.formatter->source()},
                             {"chat_template_is_default", sm.formatter->is_default()},
                             {"build_info", std::string("cria ") + cria::version_string() + " (" + cria::git_commit() + ")"},
                             {"endpoint_slots", true},
                             {"endpoint_metrics", config.metrics}});
        });
    });
    http->Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            if (!config.metrics) throw ApiError(501, "not_supported_error", "metrics are disabled (start the server with --metrics)");
            if (router && requested_model(req, nullptr).empty()) {
                // Router mode without ?model=: every loaded model, labelled, in one scrape.
                std::vector<ModelStats> models;
                for (const auto& [name, loaded] : router->loaded_models())
                    models.push_back({name, static_cast<ServedModel&>(*loaded).scheduler->stats()});
                res.set_content(metrics_text(models, http_requests.load(), true), "text/plain; version=0.0.4");
                return;
            }
            const Use use = use_model(req, nullptr);
            ServedModel& sm = *use.model;
            res.set_content(metrics_text(sm.scheduler->stats(), http_requests.load()), "text/plain; version=0.0.4");
        });
    });
}

// Slots (list, save, restore, erase) and the web page.
void Server::Impl::slot_routes() {
    http->Get("/slots", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const Use use = use_model(req, nullptr);
            ServedModel& sm = *use.model;
            json out = json::array();
            for (const auto& s : sm.scheduler->slots())
                out.push_back({{"id", s.id}, {"n_ctx", sm.backend->n_ctx_per_seq()}, {"is_processing", s.busy},
                               {"n_cached", s.n_cached}, {"n_prompt", s.n_prompt}, {"n_generated", s.n_generated}});
            send_json(res, 200, out);
        });
    });
    http->Post(R"(/slots/(\d{1,6}))", [this](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const int32_t id = std::stoi(req.matches[1].str());
            const Use use = use_model(req, nullptr);  // router mode: ?model=NAME
            ServedModel& sm = *use.model;
            const std::string action = req.get_param_value("action");
            if (action == "erase") {
                sm.scheduler->erase_slot(id);
                send_json(res, 200, {{"id_slot", id}, {"action", "erase"}});
                return;
            }
            if (action != "save" && action != "restore") throw bad_request("'action' must be save, restore or erase", "action");
            if (config.slot_save_path.empty())
                throw ApiError(501, "not_supported_error", "slot saving is disabled (start the server with --slot-save-path)");
            const json body = parse_body(req.body);
            if (!body.contains("filename") || !body["filename"].is_string()) throw bad_request("'filename' must be a string", "filename");
            const std::string name = body["filename"].get<std::string>();
            if (!is_valid_slot_filename(name))
                throw bad_request("invalid file name: use 1..128 characters from A-Z a-z 0-9 . _ - not starting with a dot", "filename");
            const std::string path = slot_file_path(config.slot_save_path, name);
            const auto t0 = Clock::now();
            size_t n = 0;
            if (action == "save") {
                n = sm.scheduler->save_slot(id, path);
            } else {
                if (!std::filesystem::exists(path)) throw ApiError(404, "not_found_error", "no slot file named " + name);
                n = sm.scheduler->restore_slot(id, path);
            }
            const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            send_json(res, 200, {{"id_slot", id}, {"filename", name},
                                 {action == "save" ? "n_saved" : "n_restored", n},
                                 {"timings", {{action == "save" ? "save_ms" : "restore_ms", ms}}}});
        });
    });
    if (config.webui) {
        auto page = [](const httplib::Request&, httplib::Response& res) {
            res.set_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'");
            res.set_content(webui_index_html().data(), webui_index_html().size(), "text/html; charset=utf-8");
        };
        http->Get("/", page);
        http->Get("/index.html", page);
    }
}

// LoRA adapters (llama-server's routes): the list with the server's scales,
// and new server scales (adapters not listed at 0) for every request to come
// that names none (running requests keep theirs).
void Server::Impl::lora_routes() {
    auto list = [](ServedModel& sm) {
        json out = json::array();
        const auto adapters = sm.backend->lora_adapters();
        const std::vector<float> scales = sm.scheduler->lora_scales();
        for (size_t i = 0; i < adapters.size() && i < scales.size(); ++i)
            out.push_back({{"id", i}, {"path", adapters[i].path}, {"scale", scales[i]}});
        return out;
    };
    http->Get("/lora-adapters", [this, list](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            const Use use = use_model(req, nullptr);  // router mode: ?model=NAME
            send_json(res, 200, list(*use.model));
        });
    });
    http->Post("/lora-adapters", [this, list](const httplib::Request& req, httplib::Response& res) {
        guarded(req, res, [&] {
            // llama-server's body is an array, which parse_body (objects only) refuses.
            const json body = json::parse(req.body, nullptr, false);
            if (body.is_discarded() || !body.is_array()) throw bad_request("the body must be an array of {\"id\", \"scale\"}");
            const Use use = use_model(req, nullptr);  // router mode: ?model=NAME
            ServedModel& sm = *use.model;
            const auto adapters = sm.backend->lora_adapters();
            // As llama-server (construct_lora_list): adapters the list does not name get scale 0.
            std::vector<float> scales(adapters.size(), 0.0f);
            for (const json& e : body) {
                if (!e.is_object() || !e.contains("id") || !e["id"].is_number_integer() || !e.contains("scale") ||
                    !e["scale"].is_number())
                    throw bad_request("entries must be {\"id\": integer, \"scale\": number}");
                const auto id = e["id"].get<int64_t>();
                if (id < 0 || id >= static_cast<int64_t>(adapters.size()))
                    throw bad_request("no adapter with id " + std::to_string(id), "id");
                const double scale = e["scale"].get<double>();
                if (!std::isfinite(scale) || std::fabs(scale) > 1e6) throw bad_request("the scale must be a finite number", "scale");
                scales[static_cast<size_t>(id)] = static_cast<float>(scale);
            }
            try {
                sm.scheduler->set_lora_scales(scales);
            } catch (const Error& e) {
                throw bad_request(e.what());
            }
            send_json(res, 200, list(sm));
        });
    });
}

Server::Server(std::unique_ptr<Backend> backend, ServerConfig config) : impl_(std::make_unique<Impl>()) {
    auto& m = *impl_;
    m.config = std::move(config);
    std::vector<std::string> names = m.config.model_aliases;
    if (std::all_of(names.begin(), names.end(), [](const std::string& n) { return n.empty(); }))
        names = {std::filesystem::path(m.config.model_path).filename().string()};
    m.single = std::make_shared<ServedModel>(std::move(backend), m.config, std::move(names), m.config.model_path);
    m.start_http();
}

Server::Server(RouterConfig rc, ServerConfig config) : impl_(std::make_unique<Impl>()) {
    auto& m = *impl_;
    m.config = std::move(config);
    if (m.config.image_encoder) throw Error("router mode takes no vision projector (--mmproj): it belongs to one model");
    auto make_backend = std::move(rc.make_backend);
    const ServerConfig* cfg = &m.config;  // the Impl outlives the router's loads (stop() ends them first)
    auto loader = [make_backend, cfg](const ModelEntry& entry) -> std::shared_ptr<LoadedModel> {
        std::fprintf(stderr, "cria serve: loading model '%s' (%s)\n", entry.name.c_str(), entry.path.c_str());
        std::vector<std::string> names{entry.name};
        names.insert(names.end(), entry.aliases.begin(), entry.aliases.end());
        ServerConfig model_config = *cfg;
        if (entry.n_parallel > 0) model_config.scheduler.n_slots = entry.n_parallel;  // the preset's parallel
        auto served = std::make_shared<ServedModel>(make_backend(entry), model_config, std::move(names), entry.path);
        served->model_id = entry.name;  // replies name the model as the router lists it
        return served;
    };
    m.router = std::make_shared<ModelRouter>(std::move(rc.models), std::move(loader), rc.limits, std::move(rc.estimate),
                                             std::move(rc.available));
    m.start_http();
}

void Server::Impl::start_http() {
    auto& m = *this;
    m.port = m.config.port;  // until start() binds (serve_bytes() checks Host against it)
    ConnectionLimits limits;
    limits.header_timeout = std::chrono::seconds(m.config.header_timeout_s);
    limits.body_timeout = std::chrono::seconds(m.config.read_timeout_s);
    limits.write_timeout = std::chrono::seconds(m.config.write_timeout_s);
    limits.max_connections = m.config.max_connections;
    m.response_store = std::make_unique<ResponseStore>(m.config.responses_max_count, m.config.responses_max_bytes);
    m.http = std::make_unique<BoundedHttpServer>(limits);
    m.http->set_payload_max_length(m.config.max_body_bytes);
    m.http->set_read_timeout(m.config.read_timeout_s, 0);
    m.http->set_write_timeout(m.config.write_timeout_s, 0);
    m.http->set_keep_alive_max_count(1000);
    m.routes();
}

Server::~Server() {
    stop();
    if (impl_->thread.joinable()) impl_->thread.join();
}

void Server::start() {
    auto& m = *impl_;
    if (m.config.port == 0) {
        m.port = m.http->bind_to_any_port(m.config.host);
        if (m.port < 0) throw Error("cannot bind to " + m.config.host);
    } else {
        if (!m.http->bind_to_port(m.config.host, m.config.port))
            throw Error("cannot bind to " + m.config.host + ":" + std::to_string(m.config.port));
        m.port = m.config.port;
    }
    m.http->deepen_backlog(1024);
    m.thread = std::thread([&m] { m.http->listen_after_bind(); });
    // listen_after_bind() sets is_running() before it accepts; wait for that (bounded).
    for (int i = 0; i < 2000 && !m.http->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void Server::wait() {
    if (impl_->thread.joinable()) impl_->thread.join();
}

void Server::stop() {
    impl_->stopped.store(true);
    impl_->http->stop();
}

int Server::port() const { return impl_->port; }

Server::Exchange Server::serve_bytes(std::string_view bytes) {
    MemoryStream stream(bytes);
    impl_->http->serve_in_memory(stream, [&] { return stream.has_more(); });
    return {stream.output(), stream.statuses()};
}
Scheduler& Server::scheduler() {
    if (!impl_->single) throw Error("a router has a scheduler per model");
    return *impl_->single->scheduler;
}
std::shared_ptr<ModelRouter> Server::router() const { return impl_->router; }

}  // namespace cria::server
