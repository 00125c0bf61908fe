// Untrusted state-space files: llama.cpp's mamba, mamba2 and KDA hybrid
// fixtures with one key patched to a value that would size the recurrent state wrongly
// (or absurdly) are refused with a cria::Error naming the key, never run.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "support/test_paths.h"

namespace cria::model {
namespace {

// A copy of fixture `name` whose u32 key `key` holds `value` (the key's bytes
// are followed by its type, 4 = u32, and the value).
std::string patched(const std::string& name, const std::string& key, uint32_t value) {
    const auto src = test::arch_fixtures_dir() / (name + ".gguf");
    std::ifstream in(src, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = std::search(bytes.begin(), bytes.end(), key.begin(), key.end());
    EXPECT_NE(at, bytes.end()) << key;
    const size_t type_at = static_cast<size_t>(at - bytes.begin()) + key.size();
    uint32_t type = 0;
    std::memcpy(&type, bytes.data() + type_at, 4);
    EXPECT_EQ(type, 4u) << key << " is not a u32";
    std::memcpy(bytes.data() + type_at + 4, &value, 4);
    const auto dst = (test::temp_dir() / (name + "-" + key + ".gguf")).string();
    std::ofstream(dst, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return dst;
}

void expect_refused(const std::string& path, const std::string& mention) {
    try {
        Model::load(path);
        ADD_FAILURE() << "loaded " << path;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
    }
}

TEST(RecurrentHostileFiles, BadStateSizesAreRefused) {
    if (test::arch_fixtures_dir().empty()) GTEST_SKIP() << "llama.cpp's architecture fixtures are not here";
    expect_refused(patched("mamba2-dense", "mamba2.ssm.group_count", 3), "group_count");  // 4 heads
    expect_refused(patched("mamba2-dense", "mamba2.ssm.time_step_rank", 3), "inner_size");  // 128 channels
    expect_refused(patched("mamba2-dense", "mamba2.ssm.conv_kernel", 0), "conv_kernel");
    expect_refused(patched("mamba2-dense", "mamba2.ssm.state_size", 0x7fffffff), "state_size");
    expect_refused(patched("mamba-dense", "mamba.ssm.inner_size", 96), "inner_size");  // not 2 n_embd
    // A consistent but different size: the tensors no longer fit it.
    expect_refused(patched("mamba-dense", "mamba.ssm.state_size", 64), "ssm_");
}

// The same for the Kimi delta attention hybrids' keys.
TEST(RecurrentHostileFiles, BadKdaSizesAreRefused) {
    if (test::arch_fixtures_dir().empty()) GTEST_SKIP() << "llama.cpp's architecture fixtures are not here";
    expect_refused(patched("kimi-linear-moe", "kimi-linear.kda.head_dim", 0), "kda.head_dim");
    expect_refused(patched("kimi-linear-moe", "kimi-linear.kda.head_dim", 0x7fffffff), "too large");
    expect_refused(patched("kimi-linear-moe", "kimi-linear.ssm.conv_kernel", 0), "conv_kernel");
    expect_refused(patched("bailingmoe3-moe", "bailingmoe3.attention.kv_lora_rank", 0), "kv_lora_rank");
    expect_refused(patched("kimi-k3-moe", "kimi-k3.expert_latent_length", 4096), "expert_latent_length");
    // A consistent but different size: the tensors no longer fit it.
    expect_refused(patched("kimi-linear-moe", "kimi-linear.kda.head_dim", 32), "blk.1.");
}

}  // namespace
}  // namespace cria::model
