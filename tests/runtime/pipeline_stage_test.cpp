// The runtime's pipeline seam (runtime/pipeline.h) without MPI: a model
// loaded as two stages in one process, the second stage's context driven by
// a loopback stage, gives exactly the logits of the whole model, for a
// dense model (austen-7m) and a hybrid one (granitehybrid: a recurrent layer
// on one stage, an attention layer on the other), with memory operations
// and a speculative checkpoint in between. Also how layers are cut into
// stages.

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <vector>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/runtime/pipeline.h"
#include "cria/runtime/pipeline_split.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

// The second stage's side: what the first stage sent, in order.
struct Wire {
    std::deque<std::vector<float>> streams, outputs;
};

class LoopbackWorker final : public PipelineStage {
public:
    explicit LoopbackWorker(Wire& wire) : wire_(wire) {}
    bool is_root() const override { return false; }
    void begin_decode(const Batch&) override { FAIL() << "only the root begins a decode"; }
    void receive_stream(std::span<float> stream) override {
        ASSERT_FALSE(wire_.streams.empty());
        ASSERT_EQ(wire_.streams.front().size(), stream.size());
        std::copy(wire_.streams.front().begin(), wire_.streams.front().end(), stream.begin());
        wire_.streams.pop_front();
    }
    void send_stream(std::span<const float>) override { FAIL() << "the last stage has no next stage"; }
    void send_outputs(std::span<const float> out) override { wire_.outputs.emplace_back(out.begin(), out.end()); }
    void receive_outputs(std::span<float>) override { FAIL() << "only the root receives outputs"; }
    void finish_decode() override {}
    void applied(const memory::SequenceOp&) override { FAIL() << "the worker's memory reports nothing"; }

private:
    Wire& wire_;
};

// The root's side: the worker context runs when the root waits for it
// (finish_decode), so one thread plays both ranks in the order MPI would.
class LoopbackRoot final : public PipelineStage {
public:
    LoopbackRoot(Wire& wire, Context*& worker) : wire_(wire), worker_(worker) {}
    bool is_root() const override { return true; }
    void begin_decode(const Batch& batch) override { batch_ = batch; }
    void receive_stream(std::span<float>) override { FAIL() << "the first stage receives no stream"; }
    void send_stream(std::span<const float> s) override { wire_.streams.emplace_back(s.begin(), s.end()); }
    void send_outputs(std::span<const float>) override { FAIL() << "the root is not the last stage here"; }
    void receive_outputs(std::span<float> out) override { destinations_.push_back(out); }
    void finish_decode() override {
        worker_answer_ = worker_->decode(batch_);
        ASSERT_TRUE(wire_.streams.empty());
        ASSERT_EQ(wire_.outputs.size(), destinations_.size());
        for (std::span<float> d : destinations_) {
            ASSERT_EQ(wire_.outputs.front().size(), d.size());
            std::copy(wire_.outputs.front().begin(), wire_.outputs.front().end(), d.begin());
            wire_.outputs.pop_front();
        }
        destinations_.clear();
    }
    void applied(const memory::SequenceOp& op) override { answers_.push_back(apply_sequence_op(worker_->memory(), op)); }
    void set_capture_layers(const std::vector<uint32_t>& layers) override { worker_->set_capture_layers(layers); }
    uint64_t keep_sequence_state(SeqId seq) override {
        kept_[next_id_] = worker_->sequence_state(seq, {});
        return next_id_++;
    }
    void load_kept_state(SeqId seq, uint64_t id, uint32_t max_positions) override {
        ASSERT_TRUE(kept_.count(id)) << "state " << id << " was dropped";
        worker_->load_sequence_state(seq, kept_.at(id), max_positions);
    }
    void drop_kept_state(uint64_t id) override { kept_.erase(id); }
    std::map<uint64_t, std::vector<uint8_t>> kept_;  // the worker's parts of the states the root keeps
    int worker_answer_ = -1;
    std::vector<bool> answers_;

private:
    Wire& wire_;
    Context*& worker_;
    uint64_t next_id_ = 1;
    Batch batch_;
    std::vector<std::span<float>> destinations_;
};

// Decodes `tokens` (prefill, then one at a time, then a checkpoint that
// keeps one of two positions, then a removal and a re-decode) and returns
// every logits row.
std::vector<std::vector<float>> decode_script(Context& ctx, const std::vector<TokenId>& tokens, size_t prefill) {
    std::vector<std::vector<float>> rows;
    const auto keep = [&](int32_t i) {
        const auto l = ctx.logits(i);
        rows.emplace_back(l.begin(), l.end());
    };
    EXPECT_EQ(ctx.decode(Batch::from_tokens({tokens.begin(), tokens.begin() + static_cast<long>(prefill)}, 0, 0, true)), 0);
    for (size_t i = 0; i < prefill; ++i) keep(static_cast<int32_t>(i));
    for (size_t p = prefill; p < tokens.size(); ++p) {
        EXPECT_EQ(ctx.decode(Batch::from_tokens({tokens[p]}, static_cast<int32_t>(p))), 0);
        keep(-1);
    }
    const auto n = static_cast<int32_t>(tokens.size());
    EXPECT_TRUE(ctx.memory().checkpoint_begin(0, 2));
    EXPECT_EQ(ctx.decode(Batch::from_tokens({tokens[1], tokens[2]}, n, 0, true)), 0);
    keep(0);
    keep(1);
    EXPECT_TRUE(ctx.memory().checkpoint_commit(0, 1));
    EXPECT_EQ(ctx.decode(Batch::from_tokens({tokens[3]}, n + 1)), 0);
    keep(-1);
    return rows;
}

void expect_stages_match(const std::string& path, uint32_t cut, const std::vector<TokenId>& tokens, size_t prefill) {
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_ubatch = 4;  // several micro-batches in flight per prefill
    cp.n_threads = 1;
    cp.type_k = cp.type_v = ElementType::F32;
    const auto whole = model::Model::load(path);
    Context reference(*whole, cp);
    const auto expected = decode_script(reference, tokens, prefill);

    const auto first = model::Model::load(path, gguf::LoadMode::Auto, true, {0, cut});
    const auto last = model::Model::load(path, gguf::LoadMode::Auto, true, {cut, UINT32_MAX});
    EXPECT_FALSE(first->holds_all_layers());
    Wire wire;
    Context* worker_ptr = nullptr;
    auto root_stage = std::make_shared<LoopbackRoot>(wire, worker_ptr);
    ContextParams worker_cp = cp;
    worker_cp.stage = std::make_shared<LoopbackWorker>(wire);
    Context worker(*last, worker_cp);
    worker_ptr = &worker;
    ContextParams root_cp = cp;
    root_cp.stage = root_stage;
    Context root(*first, root_cp);
    EXPECT_EQ(root.params().stage, nullptr) << "a context keeps its stage to itself";
    const auto got = decode_script(root, tokens, prefill);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t r = 0; r < got.size(); ++r) EXPECT_EQ(got[r], expected[r]) << path << " row " << r;
    EXPECT_EQ(root_stage->worker_answer_, 0);
    EXPECT_EQ(root_stage->answers_, (std::vector<bool>{true, true})) << "checkpoint begin and commit reached the worker";
    EXPECT_EQ(worker.memory_seq_pos_max(0), root.memory_seq_pos_max(0));
    // A stage's memory holds only its layers' cache rows.
    EXPECT_LT(root.memory_bytes(), reference.memory_bytes());
}

TEST(PipelineStage, TwoStagesGiveTheWholeModelsLogits) {
    expect_stages_match(test::model_path("austen-7m/austen-7m-f32.gguf").string(), 3,
                        {1, 450, 300, 22, 87, 5, 900, 1200, 33, 44, 55, 66}, 9);
}

TEST(PipelineStage, HybridStagesGiveTheWholeModelsLogits) {
    const auto dir = test::arch_fixtures_dir();
    if (dir.empty()) GTEST_SKIP() << "skipped: ../shared/testdata/arch-fixtures is missing";
    expect_stages_match((dir / "granitehybrid-dense.gguf").string(), 1, {3, 17, 99, 5, 64, 2, 120, 7, 8, 9}, 6);
}

// A drafter's target features (the stream entering listed layers, n_layer:
// after the last) are captured by the stage that runs each layer and reach
// the root with the logits: the same rows as the whole model's, for capture
// layers on the first stage, at the cut, and after the last layer.
TEST(PipelineStage, CapturedFeaturesCrossTheStages) {
    const std::string path = test::model_path("austen-7m/austen-7m-f32.gguf").string();
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_ubatch = 4;
    cp.n_threads = 1;
    cp.type_k = cp.type_v = ElementType::F32;
    const std::vector<uint32_t> capture{1, 3, 5, 8};
    const std::vector<TokenId> prompt{1, 450, 300, 22, 87, 5, 900, 1200, 33};
    const auto run = [&](Context& ctx) {
        ctx.set_capture_layers(capture);
        std::vector<std::vector<float>> rows;
        EXPECT_EQ(ctx.decode(Batch::from_tokens(prompt, 0, 0, true)), 0);
        for (int32_t i = 0; i < static_cast<int32_t>(prompt.size()); ++i)
            rows.emplace_back(ctx.features(i).begin(), ctx.features(i).end());
        EXPECT_EQ(ctx.decode(Batch::from_tokens({44}, static_cast<int32_t>(prompt.size()))), 0);
        rows.emplace_back(ctx.features(-1).begin(), ctx.features(-1).end());
        return rows;
    };
    const auto whole = model::Model::load(path);
    Context reference(*whole, cp);
    const auto expected = run(reference);
    ASSERT_EQ(expected[0].size(), capture.size() * whole->hparams().n_embd);

    const auto first = model::Model::load(path, gguf::LoadMode::Auto, true, {0, 3});
    const auto last = model::Model::load(path, gguf::LoadMode::Auto, true, {3, UINT32_MAX});
    Wire wire;
    Context* worker_ptr = nullptr;
    ContextParams worker_cp = cp;
    worker_cp.stage = std::make_shared<LoopbackWorker>(wire);
    Context worker(*last, worker_cp);
    worker_ptr = &worker;
    ContextParams root_cp = cp;
    root_cp.stage = std::make_shared<LoopbackRoot>(wire, worker_ptr);
    Context root(*first, root_cp);
    const auto got = run(root);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t r = 0; r < got.size(); ++r) EXPECT_EQ(got[r], expected[r]) << "row " << r;
}

// A sequence's state kept in RAM (the server's prompt cache, the turn
// checkpoints of a hybrid model) by a root whose other stage keeps its own
// part: loaded back after the sequence moved on, the next logits are the
// whole model's; dropping the bytes lets the other stage's part go; bytes
// that are not this pipeline's are refused.
TEST(PipelineStage, SequenceStateInRamReachesEveryStage) {
    const auto dir = test::arch_fixtures_dir();
    if (dir.empty()) GTEST_SKIP() << "skipped: ../shared/testdata/arch-fixtures is missing";
    const std::string path = (dir / "granitehybrid-dense.gguf").string();  // a recurrent layer, an attention layer
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_ubatch = 4;
    cp.n_threads = 1;
    cp.n_seq_max = 2;
    cp.type_k = cp.type_v = ElementType::F32;
    const std::vector<TokenId> prompt{3, 17, 99, 5, 64, 2};
    // Prompt, keep its state, go on with other tokens, load the state into
    // sequence 1, and decode the next token there.
    const auto run = [&](Context& ctx) {
        EXPECT_EQ(ctx.decode(Batch::from_tokens(prompt, 0, 0, false)), 0);
        const std::vector<uint8_t> state = ctx.sequence_state(0, prompt);
        EXPECT_EQ(ctx.decode(Batch::from_tokens({120, 7, 8}, static_cast<int32_t>(prompt.size()))), 0);
        EXPECT_EQ(ctx.load_sequence_state(1, state), prompt);
        EXPECT_EQ(ctx.decode(Batch::from_tokens({9}, static_cast<int32_t>(prompt.size()), 1)), 0);
        const auto l = ctx.logits(-1);
        ctx.drop_sequence_state(state);
        return std::vector<float>(l.begin(), l.end());
    };
    const auto whole = model::Model::load(path);
    Context reference(*whole, cp);
    const auto expected = run(reference);

    const auto first = model::Model::load(path, gguf::LoadMode::Auto, true, {0, 1});
    const auto last = model::Model::load(path, gguf::LoadMode::Auto, true, {1, UINT32_MAX});
    Wire wire;
    Context* worker_ptr = nullptr;
    ContextParams worker_cp = cp;
    worker_cp.stage = std::make_shared<LoopbackWorker>(wire);
    Context worker(*last, worker_cp);
    worker_ptr = &worker;
    auto root_stage = std::make_shared<LoopbackRoot>(wire, worker_ptr);
    ContextParams root_cp = cp;
    root_cp.stage = root_stage;
    Context root(*first, root_cp);
    EXPECT_EQ(run(root), expected);
    EXPECT_TRUE(root_stage->kept_.empty()) << "the dropped state's part is gone";
    // A whole model's bytes lack the other stage's part.
    Context fresh(*whole, cp);
    EXPECT_EQ(fresh.decode(Batch::from_tokens(prompt, 0, 0, false)), 0);
    EXPECT_THROW(root.load_sequence_state(0, fresh.sequence_state(0, prompt)), Error);
}

TEST(PipelineStage, ContextOverAStageNeedsAPipeline) {
    const auto part = model::Model::load(test::model_path("austen-7m/austen-7m-f32.gguf").string(), gguf::LoadMode::Auto,
                                         true, {0, 4});
    EXPECT_THROW(Context(*part, ContextParams{}), Error);
}

TEST(PipelineSplit, ByBytesCoversEveryLayerOnce) {
    const auto file = gguf::File::open(test::model_path("austen-7m/austen-7m-f32.gguf").string());
    for (uint32_t n : {1u, 2u, 3u, 8u}) {
        const auto ranges = split_layers_by_bytes(*file, n);
        ASSERT_EQ(ranges.size(), n);
        uint32_t next = 0;
        for (const auto& r : ranges) {
            EXPECT_EQ(r.begin, next);
            EXPECT_GT(r.end, r.begin);
            next = r.end;
        }
        EXPECT_EQ(next, 8u);
    }
    const auto two = split_layers_by_bytes(*file, 2);
    const auto bytes = stage_bytes(*file, two);
    EXPECT_LT(std::max(bytes[0], bytes[1]), 2 * std::min(bytes[0], bytes[1])) << "about even";
    EXPECT_THROW(split_layers_by_bytes(*file, 9), Error);
}

TEST(PipelineSplit, ListedCountsAreChecked) {
    const auto r = parse_layer_split("10,14", 24, 2);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0], (model::LayerRange{0, 10}));
    EXPECT_EQ(r[1], (model::LayerRange{10, 24}));
    EXPECT_THROW(parse_layer_split("10,13", 24, 2), Error);   // short of the layers
    EXPECT_THROW(parse_layer_split("10,15", 24, 2), Error);   // beyond them
    EXPECT_THROW(parse_layer_split("24", 24, 2), Error);      // one count per rank
    EXPECT_THROW(parse_layer_split("0,24", 24, 2), Error);    // every rank gets a layer
    EXPECT_THROW(parse_layer_split("10;14", 24, 2), Error);
    EXPECT_THROW(parse_layer_split("", 24, 1), Error);
}

TEST(PipelineSplit, ModelRefusesABadRange) {
    const std::string path = test::model_path("austen-7m/austen-7m-f32.gguf").string();
    EXPECT_THROW(model::Model::load(path, gguf::LoadMode::Auto, true, {4, 4}), Error);
    EXPECT_THROW(model::Model::load(path, gguf::LoadMode::Auto, true, {0, 9}), Error);
}

}  // namespace
}  // namespace cria::runtime
