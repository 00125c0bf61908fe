// The router's rules with stand-in models (no weights): least recently used
// unloading, --models-max, waiting for a load and its timeout, refusal when
// memory would not fit, a busy model never unloaded, failed loads.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <thread>

#include "cria/server/model_router.h"

using namespace cria::server;

namespace {

// A stand-in model that counts how many exist.
struct FakeModel : LoadedModel {
    explicit FakeModel(std::atomic<int>& alive) : alive_(alive) { ++alive_; }
    ~FakeModel() override { --alive_; }
    std::atomic<int>& alive_;
};

std::vector<ModelEntry> entries(std::initializer_list<const char*> names) {
    std::vector<ModelEntry> out;
    for (const char* n : names) out.push_back({n, std::string("/models/") + n + ".gguf", {}, -1, -1});
    return out;
}

struct Fixture {
    std::atomic<int> alive{0};
    std::atomic<int> loads{0};
    std::shared_ptr<ModelRouter> make(std::vector<ModelEntry> models, RouterLimits limits,
                                      ModelRouter::MemoryEstimate estimate = {},
                                      ModelRouter::MemoryAvailable available = {}) {
        return std::make_shared<ModelRouter>(
            std::move(models),
            [this](const ModelEntry&) {
                ++loads;
                return std::make_shared<FakeModel>(alive);
            },
            limits, std::move(estimate), std::move(available));
    }
};

ModelState state_of(const ModelRouter& r, const std::string& name) {
    for (const auto& s : r.status())
        if (s.entry.name == name) return s.state;
    ADD_FAILURE() << "no model " << name;
    return ModelState::Failed;
}

int status_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ModelRouterError& e) {
        return e.status();
    }
    return 200;
}

}  // namespace

TEST(ModelRouter, NamesAnswerByNameFileNameStemAndAlias) {
    Fixture fx;
    auto models = entries({"alpha", "beta"});
    models[1].aliases = {"gpt-4o"};
    auto r = fx.make(models, {});
    EXPECT_EQ(r->find("alpha")->name, "alpha");
    EXPECT_EQ(r->find("alpha.gguf")->name, "alpha");
    EXPECT_EQ(r->find("gpt-4o")->name, "beta");
    EXPECT_EQ(r->find("gamma"), nullptr);
    EXPECT_EQ(status_of([&] { r->acquire("gamma"); }), 404);
    EXPECT_EQ(fx.loads, 0);
}

TEST(ModelRouter, ClashingNamesAreRefused) {
    Fixture fx;
    auto models = entries({"alpha", "beta"});
    models[1].aliases = {"alpha"};
    EXPECT_THROW(fx.make(models, {}), cria::Error);
}

TEST(ModelRouter, LoadsOnFirstUseAndKeepsTheModel) {
    Fixture fx;
    auto r = fx.make(entries({"alpha"}), {});
    EXPECT_EQ(state_of(*r, "alpha"), ModelState::Unloaded);
    r->acquire("alpha");
    EXPECT_EQ(state_of(*r, "alpha"), ModelState::Loaded);
    r->acquire("alpha.gguf");
    EXPECT_EQ(fx.loads, 1);
    EXPECT_EQ(fx.alive, 1);
}

TEST(ModelRouter, MaxLoadedUnloadsTheLeastRecentlyUsed) {
    Fixture fx;
    auto r = fx.make(entries({"a", "b", "c"}), {2});
    r->acquire("a");
    r->acquire("b");
    r->acquire("a");  // b is now the least recently used
    r->acquire("c");
    EXPECT_EQ(state_of(*r, "a"), ModelState::Loaded);
    EXPECT_EQ(state_of(*r, "b"), ModelState::Unloaded);
    EXPECT_EQ(state_of(*r, "c"), ModelState::Loaded);
    EXPECT_EQ(fx.alive, 2);
    r->acquire("b");  // a went now (c was used after it)
    EXPECT_EQ(state_of(*r, "a"), ModelState::Unloaded);
    EXPECT_EQ(fx.alive, 2);
    EXPECT_EQ(fx.loads, 4);
}

TEST(ModelRouter, ABusyModelIsNeverUnloaded) {
    Fixture fx;
    auto r = fx.make(entries({"a", "b"}), {1});
    auto busy = r->acquire("a");
    EXPECT_EQ(status_of([&] { r->acquire("b"); }), 503);
    EXPECT_EQ(state_of(*r, "a"), ModelState::Loaded);
    EXPECT_EQ(state_of(*r, "b"), ModelState::Unloaded);
    // An unload waits for the request, and gives up (409) while it runs.
    RouterLimits quick{1, std::chrono::milliseconds(50)};
    auto r2 = fx.make(entries({"x"}), quick);
    auto held = r2->acquire("x");
    EXPECT_EQ(status_of([&] { r2->unload("x"); }), 409);
    EXPECT_EQ(state_of(*r2, "x"), ModelState::Loaded);
    // Once it ends, the other model takes its place.
    busy->release();
    r->acquire("b");
    EXPECT_EQ(state_of(*r, "a"), ModelState::Unloaded);
}

TEST(ModelRouter, UnloadWaitsForTheRequestsToEnd) {
    Fixture fx;
    auto r = fx.make(entries({"a"}), {});
    auto lease = r->acquire("a");
    std::thread ender([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        lease->release();
    });
    r->unload("a");
    ender.join();
    EXPECT_EQ(state_of(*r, "a"), ModelState::Unloaded);
    EXPECT_EQ(fx.alive, 0);
    EXPECT_EQ(status_of([&] { r->unload("a"); }), 400);  // not loaded
    EXPECT_EQ(status_of([&] { r->unload("zzz"); }), 404);
}

TEST(ModelRouter, RequestsForALoadingModelWaitForIt) {
    std::atomic<int> alive{0}, loads{0};
    std::promise<void> go;
    std::shared_future<void> gate = go.get_future().share();
    auto r = std::make_shared<ModelRouter>(
        entries({"slow"}),
        [&](const ModelEntry&) {
            ++loads;
            gate.wait();
            return std::make_shared<FakeModel>(alive);
        },
        RouterLimits{});
    auto first = std::async(std::launch::async, [&] { return r->acquire("slow"); });
    while (state_of(*r, "slow") != ModelState::Loading) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto second = std::async(std::launch::async, [&] { return r->acquire("slow"); });
    EXPECT_EQ(second.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);  // waiting
    go.set_value();
    auto a = first.get();
    auto b = second.get();
    EXPECT_EQ(&a->model(), &b->model());
    EXPECT_EQ(loads, 1);
    EXPECT_EQ(alive, 1);
}

TEST(ModelRouter, AWaitForALoadTimesOut) {
    std::atomic<int> alive{0};
    std::promise<void> go;
    std::shared_future<void> gate = go.get_future().share();
    auto r = std::make_shared<ModelRouter>(
        entries({"slow"}),
        [&](const ModelEntry&) {
            gate.wait();
            return std::make_shared<FakeModel>(alive);
        },
        RouterLimits{4, std::chrono::milliseconds(50)});
    auto first = std::async(std::launch::async, [&] { return r->acquire("slow"); });
    while (state_of(*r, "slow") != ModelState::Loading) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(status_of([&] { r->acquire("slow"); }), 504);
    go.set_value();
    EXPECT_NO_THROW(first.get());  // the load itself is not cut short
}

TEST(ModelRouter, MemoryUnloadsIdleModelsAndRefusesWhatCannotFit) {
    Fixture fx;
    std::map<std::string, uint64_t> size{{"a", 60}, {"b", 60}, {"huge", 150}};
    auto r = fx.make(entries({"a", "b", "huge"}), {8}, [&](const ModelEntry& e) { return size[e.name]; },
                     [&] { return uint64_t(100) - uint64_t(fx.alive) * 60; });
    r->acquire("a");
    r->acquire("b");  // 60 + 60 > 100: a goes first
    EXPECT_EQ(state_of(*r, "a"), ModelState::Unloaded);
    EXPECT_EQ(state_of(*r, "b"), ModelState::Loaded);
    EXPECT_EQ(status_of([&] { r->acquire("huge"); }), 503);  // not even alone
    EXPECT_EQ(state_of(*r, "huge"), ModelState::Unloaded);
    // A busy model is not unloaded to make room either.
    auto busy = r->acquire("b");
    EXPECT_EQ(status_of([&] { r->acquire("a"); }), 503);
    EXPECT_EQ(state_of(*r, "b"), ModelState::Loaded);
}

TEST(ModelRouter, AFailedLoadIsReportedAndRetried) {
    std::atomic<int> alive{0}, loads{0};
    auto r = std::make_shared<ModelRouter>(
        entries({"bad"}),
        [&](const ModelEntry&) -> std::shared_ptr<LoadedModel> {
            if (++loads == 1) throw cria::Error("not a GGUF file");
            return std::make_shared<FakeModel>(alive);
        },
        RouterLimits{});
    try {
        r->acquire("bad");
        FAIL() << "loaded";
    } catch (const ModelRouterError& e) {
        EXPECT_EQ(e.status(), 500);
        EXPECT_NE(std::string(e.what()).find("not a GGUF file"), std::string::npos);
    }
    EXPECT_EQ(r->status()[0].state, ModelState::Failed);
    EXPECT_EQ(r->status()[0].error, "not a GGUF file");
    r->acquire("bad");
    EXPECT_EQ(r->status()[0].state, ModelState::Loaded);
}

TEST(ModelRouter, WithoutAutoloadOnlyLoadLoads) {
    Fixture fx;
    RouterLimits limits;
    limits.autoload = false;
    auto r = fx.make(entries({"a"}), limits);
    EXPECT_EQ(status_of([&] { r->acquire("a"); }), 400);
    EXPECT_EQ(fx.loads, 0);
    r->load("a");
    EXPECT_NO_THROW(r->acquire("a"));
    EXPECT_EQ(fx.loads, 1);
}
