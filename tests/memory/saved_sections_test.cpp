// A saved sequence is a list of sections, one per leaf memory: it round-trips
// through the byte framing for every mix (KV only, KV + sliding window,
// KV + recurrent), and foreign, truncated or corrupt sections are refused
// without changing the memory.

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/memory/hybrid_memory.h"
#include "memory/test_memories.h"

namespace cria::memory {
namespace {

using test::decode;
using test::kv_params;
using test::recurrent_params;
using Placement = HybridMemory::LayerPlacement;

enum class Mix { Kv, KvWindow, KvRecurrent };

std::unique_ptr<HybridMemory> make(Mix mix) {
    std::vector<std::unique_ptr<Memory>> children;
    std::vector<Placement> layers{{0, 0}, {0, 1}};
    children.push_back(std::make_unique<KvCache>(kv_params(32, 2)));
    if (mix == Mix::KvWindow) children.push_back(std::make_unique<KvCache>(kv_params(32, 1, 6)));
    if (mix == Mix::KvRecurrent) children.push_back(std::make_unique<RecurrentMemory>(recurrent_params(1)));
    if (mix != Mix::Kv) layers.push_back({1, 0});
    return std::make_unique<HybridMemory>(std::move(children), layers);
}

std::vector<uint8_t> to_bytes(const std::vector<Section>& sections) {
    ByteWriter w;
    write_sections(w, sections);
    return w.buffer();
}

std::vector<Section> from_bytes(const std::vector<uint8_t>& bytes, const Memory& m) {
    ByteReader r(bytes.data(), bytes.size(), "the saved state");
    auto s = read_sections(r, static_cast<uint32_t>(m.n_sections()), m.max_saved_bytes());
    if (r.left() != 0) throw Error("trailing bytes");
    return s;
}

std::vector<Section> saved(const Memory& m, SeqId seq) {
    std::vector<Section> s;
    m.save_seq(seq, s);
    return s;
}

class SavedSections : public ::testing::TestWithParam<Mix> {};

TEST_P(SavedSections, RoundTripIntoAnotherSequence) {
    auto a = make(GetParam()), b = make(GetParam());
    ASSERT_TRUE(decode(*a, 0, 0, 12, 1.0f));
    const auto bytes = to_bytes(saved(*a, 0));
    ASSERT_TRUE(decode(*b, 2, 0, 3, 50.0f));  // b's sequence 2 holds something else
    const auto sections = from_bytes(bytes, *b);
    ASSERT_EQ(sections.size(), a->n_sections());
    EXPECT_EQ(sections[0].tag, KvCache::kTagFull);
    auto loaded = b->read_seq(2, sections, {});
    b->load_seq(2, *loaded);
    EXPECT_EQ(b->seq_pos_min(2), a->seq_pos_min(0));
    EXPECT_EQ(b->seq_pos_max(2), 11);
    // The same bytes come back out: every memory holds what was saved.
    EXPECT_EQ(to_bytes(saved(*b, 2)), bytes);
    // And both continue alike.
    ASSERT_TRUE(decode(*a, 0, 12, 2, 7.0f));
    ASSERT_TRUE(decode(*b, 2, 12, 2, 7.0f));
    EXPECT_EQ(to_bytes(saved(*b, 2)), to_bytes(saved(*a, 0)));
}

TEST_P(SavedSections, BadSectionsAreRefusedAndChangeNothing) {
    auto a = make(GetParam()), b = make(GetParam());
    ASSERT_TRUE(decode(*a, 0, 0, 8, 1.0f));
    ASSERT_TRUE(decode(*b, 1, 0, 5, 30.0f));
    const auto before = to_bytes(saved(*b, 1));
    const auto good = saved(*a, 0);
    auto refused = [&](const std::vector<Section>& s, const std::string& why) {
        SCOPED_TRACE(why);
        EXPECT_THROW(b->read_seq(1, s, {}), Error);
        EXPECT_EQ(to_bytes(saved(*b, 1)), before);
    };
    for (size_t i = 0; i < good.size(); ++i) {
        auto bad = good;
        bad[i].tag ^= 0x20;
        refused(bad, "foreign tag");
        bad = good;
        bad[i].version = 7;
        refused(bad, "version");
        bad = good;
        bad[i].payload.resize(bad[i].payload.size() - 3);
        refused(bad, "truncated payload");
        bad = good;
        bad[i].payload.push_back(1);
        refused(bad, "trailing bytes");
    }
    auto fewer = good;
    fewer.pop_back();
    refused(fewer, "a section missing");
    EXPECT_THROW(b->read_seq(1, good, LoadLimits{4}), Error);  // positions beyond the limit
    // Another mix's sections.
    for (Mix other : {Mix::Kv, Mix::KvWindow, Mix::KvRecurrent}) {
        if (other == GetParam()) continue;
        auto c = make(other);
        ASSERT_TRUE(decode(*c, 0, 0, 4, 1.0f));
        refused(saved(*c, 0), "another mix");
    }
    // The framing: truncated or oversized bytes.
    auto bytes = to_bytes(good);
    EXPECT_THROW(from_bytes({bytes.begin(), bytes.end() - 5}, *b), Error);
    bytes[0] = 99;  // section count
    EXPECT_THROW(from_bytes(bytes, *b), Error);
    bytes = to_bytes(good);
    bytes[4 + 4 + 4 + 7] = 0x7f;  // the first payload size, far beyond what the memory holds
    EXPECT_THROW(from_bytes(bytes, *b), Error);
}

INSTANTIATE_TEST_SUITE_P(Mixes, SavedSections, ::testing::Values(Mix::Kv, Mix::KvWindow, Mix::KvRecurrent));

}  // namespace
}  // namespace cria::memory
