#pragma once
// A drafter for tests of target-feature capture: it asks for some target
// layers, records every feature row it is handed (keyed by position) and
// proposes what followed `last` the last time it was seen (often right in
// the looping text of a small model, so verify steps keep several tokens).
// Header-only: used by test_spec and test_server, which both link spec.

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "cria/spec/drafter.h"

namespace cria::test {

class FeatureRecorder : public spec::Drafter {
public:
    explicit FeatureRecorder(std::vector<uint32_t> layers) : layers_(std::move(layers)) {}
    std::string_view name() const override { return "feature_recorder"; }
    void begin(const spec::BeginInput&) override {}
    void draft(const spec::DraftInput& in, int n_max, spec::Draft& out) override {
        const spec::FeaturesView& f = in.features;
        if (!f.empty()) {
            EXPECT_EQ(f.n_layers, layers_.size());
            EXPECT_EQ(f.pos0 + static_cast<int32_t>(f.n_tokens), in.pos_last) << "the rows end right before `last`";
            for (size_t t = 0; t < f.n_tokens; ++t) {
                const float* row = f.data + t * f.n_layers * f.n_embd;
                rows_[f.pos0 + static_cast<int32_t>(t)].assign(row, row + f.n_layers * f.n_embd);
            }
        }
        for (size_t i = in.history.size(); n_max > 0 && i-- > 1;)
            if (in.history[i - 1] == in.last) {
                out.tokens.push_back(in.history[i]);
                break;
            }
    }
    int n_max() const override { return 1; }
    std::vector<uint32_t> target_feature_layers() const override { return layers_; }

    const std::map<int32_t, std::vector<float>>& rows() const { return rows_; }

private:
    std::vector<uint32_t> layers_;
    std::map<int32_t, std::vector<float>> rows_;
};

}  // namespace cria::test
