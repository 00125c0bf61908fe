#pragma once
// Router mode's one idea: many models behind one server, loaded on demand.
//
// The router owns what each model needs to serve (a LoadedModel: for the
// server, its backend, formatter and scheduler) by name, with a load state
// per model. acquire() returns a Lease on a loaded model, loading it first
// when needed: the first request loads it (on its own thread, the router
// unlocked), requests for a model that is loading wait for it (at most the
// load timeout: 504). Loading one more model than `max_loaded`, or one whose
// estimated memory does not fit in what is available, first unloads the
// least recently used idle models; when that is not enough the load is
// refused (503). A model with a Lease alive is never unloaded.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cria/core/error.h"
#include "cria/server/model_catalog.h"

namespace cria::server {

// What the router keeps per loaded model (destroyed to unload it).
class LoadedModel {
public:
    virtual ~LoadedModel() = default;
};

// The HTTP status that says why: 404 unknown model, 400 not loaded,
// 409 busy, 500 the load failed, 503 no room, 504 the wait timed out.
class ModelRouterError : public Error {
public:
    ModelRouterError(int status, const std::string& message) : Error(message), status_(status) {}
    int status() const { return status_; }

private:
    int status_;
};

enum class ModelState { Unloaded, Loading, Loaded, Failed };

struct RouterLimits {
    size_t max_loaded = 4;  // models loaded (or loading) at once; 0: no limit (llama-server's --models-max)
    std::chrono::milliseconds load_timeout{std::chrono::seconds(600)};  // a request's wait for a load, an unload's for idleness
    bool autoload = true;  // false (--no-models-autoload): only load() loads; a request for a model not loaded is a 400
};

class ModelRouter : public std::enable_shared_from_this<ModelRouter> {
public:
    using Loader = std::function<std::shared_ptr<LoadedModel>(const ModelEntry&)>;
    // Bytes a model would take once loaded, and bytes available now; either
    // empty: memory is not checked.
    using MemoryEstimate = std::function<uint64_t(const ModelEntry&)>;
    using MemoryAvailable = std::function<uint64_t()>;

    // Make it with std::make_shared (leases keep it alive). Throws
    // cria::Error when two models answer to the same name.
    ModelRouter(std::vector<ModelEntry> models, Loader loader, RouterLimits limits, MemoryEstimate estimate = {},
                MemoryAvailable available = {});

    // A model in use. release() (or the destructor) ends the use.
    class Lease {
    public:
        Lease(std::shared_ptr<ModelRouter> router, size_t index, std::shared_ptr<LoadedModel> model);
        ~Lease();
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        LoadedModel& model() const { return *model_; }
        const ModelEntry& entry() const;
        void release();

    private:
        std::shared_ptr<ModelRouter> router_;
        size_t index_;
        std::shared_ptr<LoadedModel> model_;
        bool released_ = false;
    };

    // The model a name answers to (ModelEntry::answers_to), or null.
    const ModelEntry* find(std::string_view name) const;
    // The named model, loaded (by this call when limits.autoload); throws ModelRouterError (see above).
    std::shared_ptr<Lease> acquire(std::string_view name);
    // POST /models/load: acquire() and release at once.
    void load(std::string_view name);
    // POST /models/unload: waits (load timeout) for its requests to end;
    // throws ModelRouterError 400 when it is not loaded, 409 when it stays busy.
    void unload(std::string_view name);

    struct ModelStatus {
        ModelEntry entry;
        ModelState state = ModelState::Unloaded;
        std::string error;   // why the last load failed
        int32_t in_use = 0;  // leases alive
    };
    std::vector<ModelStatus> status() const;
    // The models loaded now, by name, in the list's order: a look that is no
    // use (nothing loads, no least-recently-used order changes; the pointer
    // keeps a model that is unloaded meanwhile alive until it is dropped).
    std::vector<std::pair<std::string, std::shared_ptr<LoadedModel>>> loaded_models() const;
    const std::vector<ModelEntry>& models() const { return entries_; }

private:
    struct Slot {
        ModelState state = ModelState::Unloaded;
        std::shared_ptr<LoadedModel> model;
        std::string error;
        int32_t in_use = 0;
        uint64_t last_used = 0;  // the router's clock at its last acquire or release
    };
    size_t index_of(std::string_view name) const;
    void make_room(std::unique_lock<std::mutex>& lock, size_t index);
    bool unload_least_recently_used(std::unique_lock<std::mutex>& lock);
    void end_use(size_t index);
    std::shared_ptr<Lease> acquire(std::string_view name, bool may_load);

    const std::vector<ModelEntry> entries_;
    const Loader loader_;
    const RouterLimits limits_;
    const MemoryEstimate estimate_;
    const MemoryAvailable available_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;  // a load ended, a use ended
    std::vector<Slot> slots_;          // one per entry, same order
    uint64_t clock_ = 0;
};

std::string_view model_state_name(ModelState state);

}  // namespace cria::server
