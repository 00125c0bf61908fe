// Router mode: load states, least-recently-used unloading, waiting for a load.
#include "cria/server/model_router.h"

#include <algorithm>

namespace cria::server {

namespace {

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

}  // namespace

std::string_view model_state_name(ModelState state) {
    switch (state) {
        case ModelState::Unloaded: return "unloaded";
        case ModelState::Loading: return "loading";
        case ModelState::Loaded: return "loaded";
        case ModelState::Failed: return "failed";
    }
    return "unloaded";
}

ModelRouter::ModelRouter(std::vector<ModelEntry> models, Loader loader, RouterLimits limits, MemoryEstimate estimate,
                         MemoryAvailable available)
    : entries_(std::move(models)),
      loader_(std::move(loader)),
      limits_(limits),
      estimate_(std::move(estimate)),
      available_(std::move(available)),
      slots_(entries_.size()) {
    check_model_names(entries_);
}

ModelRouter::Lease::Lease(std::shared_ptr<ModelRouter> router, size_t index, std::shared_ptr<LoadedModel> model)
    : router_(std::move(router)), index_(index), model_(std::move(model)) {}

ModelRouter::Lease::~Lease() { release(); }

const ModelEntry& ModelRouter::Lease::entry() const { return router_->entries_[index_]; }

void ModelRouter::Lease::release() {
    if (released_) return;
    released_ = true;
    // Our reference goes before the use ends: an unload right after then
    // frees the model at once, in whichever thread unloads it.
    auto model = std::move(model_);
    model.reset();
    router_->end_use(index_);
}

void ModelRouter::end_use(size_t index) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        Slot& s = slots_[index];
        --s.in_use;
        s.last_used = ++clock_;
    }
    changed_.notify_all();
}

size_t ModelRouter::index_of(std::string_view name) const {
    // Exact names and aliases first, then file names and stems.
    for (size_t i = 0; i < entries_.size(); ++i) {
        const auto& e = entries_[i];
        if (e.name == name || std::find(e.aliases.begin(), e.aliases.end(), name) != e.aliases.end()) return i;
    }
    for (size_t i = 0; i < entries_.size(); ++i)
        if (entries_[i].answers_to(name)) return i;
    return entries_.size();
}

const ModelEntry* ModelRouter::find(std::string_view name) const {
    const size_t i = index_of(name);
    return i < entries_.size() ? &entries_[i] : nullptr;
}

bool ModelRouter::unload_least_recently_used(std::unique_lock<std::mutex>&) {
    Slot* oldest = nullptr;
    for (auto& s : slots_)
        if (s.state == ModelState::Loaded && s.in_use == 0 && (!oldest || s.last_used < oldest->last_used)) oldest = &s;
    if (!oldest) return false;
    oldest->state = ModelState::Unloaded;
    oldest->model.reset();  // frees it now: the memory check that follows sees it gone
    return true;
}

void ModelRouter::make_room(std::unique_lock<std::mutex>& lock, size_t index) {
    const ModelEntry& entry = entries_[index];
    if (limits_.max_loaded > 0) {
        for (;;) {
            size_t n = 0;
            for (size_t i = 0; i < slots_.size(); ++i)
                if (i != index && (slots_[i].state == ModelState::Loaded || slots_[i].state == ModelState::Loading)) ++n;
            if (n < limits_.max_loaded) break;
            if (!unload_least_recently_used(lock))
                throw ModelRouterError(503, "cannot load model '" + entry.name + "': " + std::to_string(n) +
                                                " models are loaded or loading (--models-max " +
                                                std::to_string(limits_.max_loaded) + ") and none is idle");
        }
    }
    if (estimate_ && available_) {
        const uint64_t need = estimate_(entry);
        for (;;) {
            const uint64_t have = available_();
            if (need <= have) break;
            if (!unload_least_recently_used(lock))
                throw ModelRouterError(503, "cannot load model '" + entry.name + "': it needs about " + mib(need) +
                                                " (file and context) and " + mib(have) +
                                                " of memory is available with every idle model unloaded");
        }
    }
}

std::shared_ptr<ModelRouter::Lease> ModelRouter::acquire(std::string_view name) { return acquire(name, limits_.autoload); }

std::shared_ptr<ModelRouter::Lease> ModelRouter::acquire(std::string_view name, bool may_load) {
    const size_t index = index_of(name);
    if (index >= entries_.size()) throw ModelRouterError(404, "The model `" + std::string(name) + "` does not exist");
    const ModelEntry& entry = entries_[index];
    std::unique_lock<std::mutex> lock(mutex_);
    Slot& s = slots_[index];
    const auto deadline = std::chrono::steady_clock::now() + limits_.load_timeout;
    bool waited = false;
    for (;;) {
        if (s.state == ModelState::Loaded) {
            ++s.in_use;
            s.last_used = ++clock_;
            return std::make_shared<Lease>(shared_from_this(), index, s.model);
        }
        if (s.state == ModelState::Loading) {
            waited = true;
            if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && s.state == ModelState::Loading)
                throw ModelRouterError(504, "model '" + entry.name + "' is still loading after " +
                                                std::to_string(limits_.load_timeout.count() / 1000) +
                                                " s (--models-load-timeout)");
            continue;
        }
        // The load this request waited for failed: say why rather than try again at once.
        if (s.state == ModelState::Failed && waited)
            throw ModelRouterError(500, "model '" + entry.name + "' failed to load: " + s.error);
        if (!may_load)
            throw ModelRouterError(400, "model '" + entry.name +
                                            "' is not loaded and this server loads models only when asked "
                                            "(--no-models-autoload): POST /models/load first");
        break;
    }
    make_room(lock, index);
    s.state = ModelState::Loading;
    s.error.clear();
    lock.unlock();
    std::shared_ptr<LoadedModel> model;
    std::string error;
    try {
        model = loader_(entry);
        if (!model) error = "the loader returned nothing";
    } catch (const std::exception& e) {
        error = e.what();
    }
    lock.lock();
    if (!model) {
        s.state = ModelState::Failed;
        s.error = error;
        lock.unlock();
        changed_.notify_all();
        throw ModelRouterError(500, "model '" + entry.name + "' failed to load: " + error);
    }
    s.model = model;
    s.state = ModelState::Loaded;
    ++s.in_use;
    s.last_used = ++clock_;
    auto lease = std::make_shared<Lease>(shared_from_this(), index, std::move(model));
    lock.unlock();
    changed_.notify_all();
    return lease;
}

void ModelRouter::load(std::string_view name) { acquire(name, true)->release(); }

void ModelRouter::unload(std::string_view name) {
    const size_t index = index_of(name);
    if (index >= entries_.size()) throw ModelRouterError(404, "The model `" + std::string(name) + "` does not exist");
    const ModelEntry& entry = entries_[index];
    std::unique_lock<std::mutex> lock(mutex_);
    Slot& s = slots_[index];
    const auto deadline = std::chrono::steady_clock::now() + limits_.load_timeout;
    // A load in progress ends first; then the requests using it.
    while (s.state == ModelState::Loading || (s.state == ModelState::Loaded && s.in_use > 0)) {
        if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
            (s.state == ModelState::Loading || s.in_use > 0))
            throw ModelRouterError(409, "model '" + entry.name + "' is busy: " + std::to_string(s.in_use) +
                                            " requests are using it");
    }
    if (s.state != ModelState::Loaded) throw ModelRouterError(400, "model '" + entry.name + "' is not loaded");
    s.state = ModelState::Unloaded;
    s.model.reset();
}

std::vector<ModelRouter::ModelStatus> ModelRouter::status() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<ModelStatus> out;
    for (size_t i = 0; i < entries_.size(); ++i)
        out.push_back({entries_[i], slots_[i].state, slots_[i].error, slots_[i].in_use});
    return out;
}

std::vector<std::pair<std::string, std::shared_ptr<LoadedModel>>> ModelRouter::loaded_models() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<std::string, std::shared_ptr<LoadedModel>>> out;
    for (size_t i = 0; i < entries_.size(); ++i)
        if (slots_[i].state == ModelState::Loaded && slots_[i].model) out.emplace_back(entries_[i].name, slots_[i].model);
    return out;
}

}  // namespace cria::server
