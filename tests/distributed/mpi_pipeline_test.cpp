// The cria binary under mpirun on this machine (loopback): a model split
// over 2 or 3 ranks gives the logits and the greedy text of one process
// (the same arithmetic, only split: NMSE <= 1e-10), with and without a draft
// model and with each drafter that reads the target's features; cria serve under mpirun answers a request; a killed rank ends the
// job within 10 s, and a rank that stops answering ends it with an error
// naming the rank. Skipped, saying why, when mpirun is missing or the cria
// binary was built without MPI.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cria/gguf/file.h"
#include "support/lora_files.h"
#include "support/test_paths.h"

namespace {

namespace fs = std::filesystem;

struct Result {
    int status = -1;
    std::string out;
    double seconds = 0;
};

// Runs a shell command, stdout captured (stderr to a file when asked).
Result shell(const std::string& command) {
    Result r;
    const auto t0 = std::chrono::steady_clock::now();
    FILE* p = ::popen(command.c_str(), "r");
    if (p == nullptr) return r;
    std::array<char, 65536> buf;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = ::pclose(p);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

std::string cria() { return (fs::path(CRIA_BINARY_DIR) / "cria").string(); }

// mpirun on loopback, as root too (CI runs as root), oversubscribed (2 cores here).
std::string mpirun(int np) {
    return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "
           "ASAN_OPTIONS=detect_leaks=0 "  // Open MPI keeps allocations until exit (sanitizer builds)
           "timeout 300 mpirun --oversubscribe --bind-to none -np " + std::to_string(np) + " ";
}

// Why these tests cannot run here, or "" when they can.
std::string unavailable() {
    if (shell("command -v mpirun >/dev/null 2>&1").status != 0) return "mpirun is missing (apt-get install openmpi-bin)";
    const Result r = shell(cria() + " --mpi-timeout 5 --version 2>&1");
    if (r.out.find("built without") != std::string::npos) return "this cria was built without MPI (libopenmpi-dev)";
    return "";
}

#define SKIP_WITHOUT_MPI()                                          \
    do {                                                            \
        const std::string why = unavailable();                      \
        if (!why.empty()) GTEST_SKIP() << "skipped: " << why;       \
    } while (0)

std::vector<std::vector<double>> logits_of(const std::string& json) {
    const auto j = nlohmann::json::parse(json);
    return j.at("logits").get<std::vector<std::vector<double>>>();
}

double nmse(const std::vector<std::vector<double>>& ref, const std::vector<std::vector<double>>& got) {
    double num = 0, den = 0;
    for (size_t r = 0; r < ref.size(); ++r)
        for (size_t i = 0; i < ref[r].size(); ++i) {
            num += (ref[r][i] - got[r][i]) * (ref[r][i] - got[r][i]);
            den += ref[r][i] * ref[r][i];
        }
    return num / den;
}

// `cria logits` of `model` in one process and over np ranks.
void expect_same_logits(const fs::path& model, const std::string& tokens, int prefill, const std::vector<int>& ranks) {
    const std::string args = " logits -m " + model.string() + " --tokens " + tokens + " --prefill " +
                             std::to_string(prefill) + " -t 1 2>/dev/null";
    const Result single = shell(cria() + args);
    ASSERT_EQ(single.status, 0) << model;
    const auto ref = logits_of(single.out);
    for (int np : ranks) {
        const Result split = shell(mpirun(np) + cria() + args);
        ASSERT_EQ(split.status, 0) << model << " on " << np << " ranks";
        const auto got = logits_of(split.out);
        ASSERT_EQ(got.size(), ref.size());
        EXPECT_LE(nmse(ref, got), 1e-10) << model << " on " << np << " ranks";
    }
}

std::string fixture_tokens(const fs::path& json_path, int& prefill) {
    std::ifstream in(json_path);
    const auto j = nlohmann::json::parse(in);
    prefill = j.at("prefill").get<int>();
    std::string tokens;
    for (int t : j.at("tokens")) tokens += (tokens.empty() ? "" : ",") + std::to_string(t);
    return tokens;
}

TEST(MpiPipeline, FixtureLogitsEqualOneProcess) {
    SKIP_WITHOUT_MPI();
    const fs::path dir = cria::test::arch_fixtures_dir();
    if (dir.empty()) GTEST_SKIP() << "skipped: ../shared/testdata/arch-fixtures is missing";
    // dense, dense with QK norm, mixture of experts, hybrid (recurrent + attention),
    // gated delta net. The fixtures have 2 layers: one per rank.
    for (const char* name : {"llama-dense", "qwen3-dense", "qwen3moe-moe", "granitehybrid-dense", "qwen35-dense"}) {
        int prefill = 0;
        const std::string tokens = fixture_tokens(dir / (std::string(name) + ".json"), prefill);
        expect_same_logits(dir / (std::string(name) + ".gguf"), tokens, prefill, {2});
    }
}

// A LoRA adapter on layers of every rank: each rank loads the adapter for
// its own layers, and the logits are one process's with the adapter (which
// differ from the base model's).
TEST(MpiPipeline, LoraAdapterLogitsEqualOneProcess) {
    SKIP_WITHOUT_MPI();
    const std::string model = cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    const auto base = cria::gguf::File::open(model);
    cria::test::AdapterSpec adapter;
    adapter.alpha = 4.0f;
    adapter.tensors = {cria::test::random_pair(*base, "blk.0.attn_q.weight", 4, 21),
                       cria::test::random_pair(*base, "blk.4.ffn_down.weight", 4, 22),
                       cria::test::random_pair(*base, "blk.7.attn_k.weight", 2, 23)};
    const std::string path = (cria::test::temp_dir() / "adapter.gguf").string();
    cria::test::write_adapter(adapter, path);
    const std::string args = " logits -m " + model + " --tokens 1,450,300,22,87,5,900,1200 --prefill 5 -t 1";
    const std::string lora = " --lora-scaled " + path + " 0.5";
    const Result plain = shell(cria() + args + " 2>/dev/null");
    const Result single = shell(cria() + args + lora + " 2>/dev/null");
    ASSERT_EQ(single.status, 0);
    const auto ref = logits_of(single.out);
    EXPECT_GT(nmse(ref, logits_of(plain.out)), 1e-6) << "the adapter changes the logits";
    for (int np : {2, 3}) {
        const Result split = shell(mpirun(np) + cria() + args + lora + " 2>&1 >" +
                                   (cria::test::temp_dir() / "lora.json").string());
        ASSERT_EQ(split.status, 0) << split.out;
        std::ifstream in(cria::test::temp_dir() / "lora.json");
        std::stringstream text;
        text << in.rdbuf();
        const auto got = logits_of(text.str());
        ASSERT_EQ(got.size(), ref.size());
        EXPECT_LE(nmse(ref, got), 1e-10) << np << " ranks";
    }
}

TEST(MpiPipeline, AustenLogitsEqualOneProcessOnTwoAndThreeRanks) {
    SKIP_WITHOUT_MPI();
    expect_same_logits(cria::test::model_path("austen-7m/austen-7m-f32.gguf"), "1,450,300,22,87,5,900,1200,33,44,55,66,77,88",
                       6, {2, 3});
}

TEST(MpiPipeline, LayerSplitIsFollowedAndChecked) {
    SKIP_WITHOUT_MPI();
    const std::string model = cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    const Result ok = shell(mpirun(2) + cria() + " --layer-split 7,1 logits -m " + model + " --tokens 1,2,3 -t 1 2>&1 >/dev/null");
    EXPECT_EQ(ok.status, 0);
    EXPECT_NE(ok.out.find("rank 0 holds layers 0..6"), std::string::npos) << ok.out;
    EXPECT_NE(ok.out.find("rank 1 holds layers 7..7"), std::string::npos) << ok.out;
    const Result bad = shell(mpirun(2) + cria() + " --layer-split 4,3 logits -m " + model + " --tokens 1,2,3 -t 1 2>&1");
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.out.find("covers 7 layers; the model has 8"), std::string::npos) << bad.out;
}

// A model the ranks cannot hold is refused at load, and the error says what
// each rank would need and which ranks cannot hold their layers.
// CRIA_RANK_MEMORY_MIB caps what each rank may use (this host has plenty).
TEST(MpiPipeline, ModelTheRanksCannotHoldIsRefusedWithEachRanksNeed) {
    SKIP_WITHOUT_MPI();
    const std::string model = cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    const std::string logits = " logits -m " + model + " --tokens 1,2,3 -t 1 2>&1 >/dev/null";
    // By bytes: 15 MiB on rank 0, 13 MiB on rank 1; neither fits in 1 MiB.
    const Result none = shell("CRIA_RANK_MEMORY_MIB=1 " + mpirun(2) + cria() + logits);
    EXPECT_NE(none.status, 0);
    EXPECT_NE(none.out.find("weights each rank needs: rank 0 15.0 MiB, rank 1 13.0 MiB"), std::string::npos) << none.out;
    EXPECT_NE(none.out.find("rank 0 cannot hold layers 0..4: they need 15.0 MiB of weights, this rank may use 1.0 MiB"),
              std::string::npos) << none.out;
    EXPECT_NE(none.out.find("rank 1 cannot hold layers 5..7: they need 13.0 MiB"), std::string::npos) << none.out;
    // 7 layers on rank 0 (21 MiB) do not fit in 16 MiB; rank 1's 7 MiB do, and only rank 0 is named.
    const Result one = shell("CRIA_RANK_MEMORY_MIB=16 " + mpirun(2) + cria() + " --layer-split 7,1" + logits);
    EXPECT_NE(one.status, 0);
    EXPECT_NE(one.out.find("weights each rank needs: rank 0 21.0 MiB, rank 1 7.0 MiB"), std::string::npos) << one.out;
    EXPECT_NE(one.out.find("rank 0 cannot hold layers 0..6"), std::string::npos) << one.out;
    EXPECT_EQ(one.out.find("rank 1 cannot hold"), std::string::npos) << one.out;
    // The even split fits 16 MiB per rank.
    EXPECT_EQ(shell("CRIA_RANK_MEMORY_MIB=16 " + mpirun(2) + cria() + logits).status, 0);
    const Result bad = shell("CRIA_RANK_MEMORY_MIB=lots " + mpirun(2) + cria() + logits);
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.out.find("CRIA_RANK_MEMORY_MIB must be a number of MiB, not 'lots'"), std::string::npos) << bad.out;
}

// Greedy text, with and without a draft model, equals one process's.
TEST(MpiPipeline, GreedyRunTextEqualsOneProcess) {
    SKIP_WITHOUT_MPI();
    const std::string model = cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    const std::string draft = cria::test::model_path("austen-1m/austen-1m-f32.gguf").string();
    const std::string args = " run -m " + model + " -p 'It is a truth universally acknowledged' -n 40 --temp 0 -t 1 -c 512";
    const Result single = shell(cria() + args + " 2>/dev/null");
    ASSERT_EQ(single.status, 0);
    ASSERT_GT(single.out.size(), 60u);
    for (int np : {2, 3}) {
        const Result split = shell(mpirun(np) + cria() + args + " 2>/dev/null");
        EXPECT_EQ(split.status, 0);
        EXPECT_EQ(split.out, single.out) << np << " ranks";
    }
    const Result drafted = shell(mpirun(2) + cria() + args + " -md " + draft + " 2>/dev/null");
    EXPECT_EQ(drafted.status, 0);
    EXPECT_EQ(drafted.out, single.out) << "2 ranks with a draft model";
}

// The greedy text and the acceptance per draft position (stderr's "#acc
// rate/pos" line; adaptive drafting off, so timing decides nothing) of `cria
// run` with a drafter that reads the target's features: these travel from
// the rank that runs each captured layer to rank 0, where the drafter runs.
// Same features, same drafts: the same acceptance, not only the same text.
std::string drafted_run(const std::string& launcher, const std::string& model, const std::string& spec) {
    const fs::path err = cria::test::temp_dir() / "drafted.err";
    const Result r = shell(launcher + cria() + " run -m " + model + " --spec-adaptive off --spec-type " + spec +
                           " -p 'It is a truth universally acknowledged' -n 40 --temp 0 -t 1 -c 512 2>" + err.string());
    EXPECT_EQ(r.status, 0) << launcher << spec;
    const Result acc = shell("grep 'acc rate/pos' " + err.string());
    EXPECT_FALSE(acc.out.empty()) << spec << ": nothing was drafted";
    return r.out + acc.out;
}

TEST(MpiPipeline, FeatureReadingDraftersGiveOneProcesssTextAndAcceptance) {
    SKIP_WITHOUT_MPI();
    fs::path dir = cria::test::source_dir().parent_path() / "shared" / "testdata" / "drafter-fixtures";
    if (const char* env = std::getenv("CRIA_DRAFTER_FIXTURES")) dir = env;
    if (!fs::exists(dir / "eagle3-austen-7m.gguf")) GTEST_SKIP() << "skipped: ../shared/testdata/drafter-fixtures is missing";
    const std::string austen = cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    struct Case {
        std::string model, spec;
        std::vector<int> ranks;
    };
    // austen-7m has 8 layers (2 and 3 ranks); the MTP target (mimo2) 2, one per rank.
    const std::vector<Case> cases{
        {austen, "draft-eagle3 -md " + (dir / "eagle3-austen-7m.gguf").string(), {2, 3}},
        {austen, "draft-dflash -md " + (dir / "dflash-austen-7m.gguf").string(), {2, 3}},
        {austen, "draft-dspark -md " + (dir / "dspark-austen-7m.gguf").string(), {2, 3}},
        {austen, "draft-dspark -md " + (dir / "dspark-anchor-austen-7m.gguf").string(), {2}},
        {(dir / "mimo2-austen-1m-mtp.gguf").string(), "draft-mtp", {2}},
    };
    for (const Case& c : cases) {
        const std::string single = drafted_run("", c.model, c.spec);
        ASSERT_GT(single.size(), 60u) << c.spec;
        for (int np : c.ranks) EXPECT_EQ(drafted_run(mpirun(np), c.model, c.spec), single) << c.spec << " on " << np << " ranks";
    }
}

// Starts cria serve under mpirun in the background; returns the shell
// snippet's output. `then` runs once the server listens ($PORT, $MPIRUN: the pid).
Result with_server(int np, const std::string& then, const std::string& extra = "", const std::string& serve_extra = "") {
    const fs::path log = cria::test::temp_dir() / "serve.log";
    const std::string model = cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    const std::string script =
        "PORT=$(( 20000 + RANDOM % 20000 )); " + mpirun(np) + cria() + extra + " serve -m " + model +
        " -t 1 -c 1024 --port $PORT" + serve_extra + " >" + log.string() + " 2>&1 & MPIRUN=$!; "
        "for i in $(seq 1 300); do grep -q listening " + log.string() + " && break; sleep 0.1; done; " + then +
        "; kill $MPIRUN 2>/dev/null; wait $MPIRUN 2>/dev/null; echo; echo LOG:; cat " + log.string();
    return shell("bash -c '" + script + "' 2>&1");
}

// Two requests at once on two slots over three ranks: each answer is the
// greedy continuation one process gives.
TEST(MpiPipeline, ServeAnswersUnderMpirun) {
    SKIP_WITHOUT_MPI();
    const fs::path dir = cria::test::temp_dir();
    const std::vector<std::string> prompts{"It is a truth", "Mr. Darcy was"};
    std::string requests;
    for (size_t i = 0; i < prompts.size(); ++i)
        requests += "curl -s -m 120 http://127.0.0.1:$PORT/v1/completions -H \"Content-Type: application/json\" "
                    "-d \"{\\\"prompt\\\": \\\"" + prompts[i] + "\\\", \\\"max_tokens\\\": 16, \\\"temperature\\\": 0}\" > " +
                    (dir / ("answer" + std::to_string(i) + ".json")).string() + " & C" + std::to_string(i) + "=$!; ";
    const Result r = with_server(3, requests + "wait $C0 $C1", "", " -np 2");
    const std::string model = cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    for (size_t i = 0; i < prompts.size(); ++i) {
        std::ifstream in(dir / ("answer" + std::to_string(i) + ".json"));
        std::stringstream text;
        text << in.rdbuf();
        ASSERT_FALSE(text.str().empty()) << r.out;
        const auto answer = nlohmann::json::parse(text.str());
        EXPECT_EQ(answer.at("usage").at("completion_tokens").get<int>(), 16) << text.str();
        const Result single = shell(cria() + " run -m " + model + " -p '" + prompts[i] + "' -n 16 --temp 0 -t 1 -c 512 2>/dev/null");
        std::string expected = single.out;  // cria run ends its text with a blank line
        while (!expected.empty() && expected.back() == '\n') expected.pop_back();
        EXPECT_EQ(prompts[i] + answer.at("choices").at(0).at("text").get<std::string>(), expected) << prompts[i];
    }
}

// The prompt cache (--cache-ram) with a model split over 2 ranks: slot 0
// answers A, then takes an unrelated long request Q, so A's state leaves the
// slot for the cache (rank 0 keeps its part, rank 1 its own under the same
// id); B shares A's prefix and arrives while Q holds slot 0, so slot 1 loads
// the cached prefix (on both ranks) and evaluates only the rest. B's answer
// is one process's greedy continuation, and the cache was used.
TEST(MpiPipeline, PromptCacheReusedAcrossSlotsGivesOneProcesssText) {
    SKIP_WITHOUT_MPI();
    const fs::path dir = cria::test::temp_dir() / "prompt-cache";
    fs::create_directories(dir);
    const std::string prefix = "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
                               "must be in want of a wife. However little known the feelings or views of such a man may be";
    const auto complete = [](const std::string& prompt, int n, const fs::path& out, bool background) {
        return "curl -s -m 120 http://127.0.0.1:$PORT/v1/completions -H \"Content-Type: application/json\" "
               "-d \"{\\\"prompt\\\": \\\"" + prompt + "\\\", \\\"max_tokens\\\": " + std::to_string(n) +
               ", \\\"temperature\\\": 0}\" > " + out.string() + (background ? " & Q=$!; sleep 1; " : "; ");
    };
    const std::string b_prompt = prefix + " on his first entering";
    const std::string script = complete(prefix + " when he first came", 8, dir / "a.json", false) +
                               complete("Mr. Darcy walked", 200, dir / "q.json", true) +
                               complete(b_prompt, 24, dir / "b.json", false) + "wait $Q; curl -s http://127.0.0.1:$PORT/metrics > " +
                               (dir / "metrics.txt").string();
    const Result r = with_server(2, script, "", " -np 2 --metrics");
    const auto read = [](const fs::path& p) {
        std::ifstream in(p);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    };
    const std::string b = read(dir / "b.json");
    ASSERT_FALSE(b.empty()) << r.out;
    const std::string model = cria::test::model_path("austen-7m/austen-7m-f32.gguf").string();
    const Result single = shell(cria() + " run -m " + model + " -p '" + b_prompt + "' -n 24 --temp 0 -t 1 -c 512 2>/dev/null");
    std::string expected = single.out;
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    EXPECT_EQ(b_prompt + nlohmann::json::parse(b).at("choices").at(0).at("text").get<std::string>(), expected);
    const std::string metrics = read(dir / "metrics.txt");
    EXPECT_NE(metrics.find("prompt_cache_hits_total 1"), std::string::npos) << metrics << r.out;
    EXPECT_EQ(r.out.find("prompt cache:"), std::string::npos) << "no state was refused: " << r.out;
}

// A slot saved under mpirun is one file per rank; erased and restored, it
// gives the same continuation; a rank whose file is damaged refuses the
// restore, and the error names it.
TEST(MpiPipeline, SlotSaveAndRestoreReachEveryRank) {
    SKIP_WITHOUT_MPI();
    const fs::path dir = cria::test::temp_dir() / "slots";
    fs::create_directories(dir);
    const auto post = [](const std::string& what, const std::string& body, const std::string& out) {
        return "curl -s -m 120 -X POST \"http://127.0.0.1:$PORT" + what + "\" -H \"Content-Type: application/json\" -d \"" +
               body + "\" > " + out + "; echo >> " + out + "; ";
    };
    const std::string completion = "{\\\"prompt\\\": \\\"It is a truth\\\", \\\"max_tokens\\\": 8, \\\"temperature\\\": 0}";
    const std::string file = "{\\\"filename\\\": \\\"s.bin\\\"}";
    const fs::path log = dir / "answers.txt";
    const std::string script =
        post("/v1/completions", completion, log.string()) + post("/slots/0?action=save", file, log.string() + ".save") +
        post("/slots/0?action=erase", "{}", "/dev/null") + post("/slots/0?action=restore", file, log.string() + ".restore") +
        post("/v1/completions", completion, log.string() + ".again") + "head -c 100 " + (dir / "s.bin.rank2").string() +
        " > " + (dir / "cut").string() + " && cp " + (dir / "cut").string() + " " + (dir / "s.bin.rank2").string() + "; " +
        post("/slots/0?action=restore", file, log.string() + ".bad") + "true";
    const Result r = with_server(3, script, "", " --slot-save-path " + dir.string());
    const auto read = [](const fs::path& p) {
        std::ifstream in(p);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    };
    for (const char* name : {"s.bin", "s.bin.rank1", "s.bin.rank2"}) EXPECT_TRUE(fs::exists(dir / name)) << name << r.out;
    const auto first = nlohmann::json::parse(read(log));
    const auto saved = nlohmann::json::parse(read(log.string() + ".save"));
    const auto restored = nlohmann::json::parse(read(log.string() + ".restore"));
    const auto again = nlohmann::json::parse(read(log.string() + ".again"));
    EXPECT_GT(saved.value("n_saved", 0), 0) << saved.dump();
    EXPECT_EQ(restored.value("n_restored", -1), saved.value("n_saved", 0)) << restored.dump();
    EXPECT_EQ(again.at("choices").at(0).at("text"), first.at("choices").at(0).at("text"));
    const std::string bad = read(log.string() + ".bad");
    EXPECT_NE(bad.find("rank 2"), std::string::npos) << bad;
}

// The pid of rank `rank` of the server started on $PORT (its environment names the rank).
std::string rank_pid(int rank) {
    return "$(for p in $(pgrep -f -- \"--port $PORT\"); do tr \"\\0\" \"\\n\" < /proc/$p/environ 2>/dev/null | grep -qx "
           "OMPI_COMM_WORLD_RANK=" + std::to_string(rank) + " && echo $p; done)";
}

TEST(MpiPipeline, KilledRankEndsTheJobWithinTenSeconds) {
    SKIP_WITHOUT_MPI();
    const Result r = with_server(2, "R1=" + rank_pid(1) + "; T0=$(date +%s.%N); kill -9 $R1; "
                                    "for i in $(seq 1 150); do kill -0 $MPIRUN 2>/dev/null || break; sleep 0.1; done; "
                                    "echo ENDED_AFTER $(echo \"$(date +%s.%N) - $T0\" | bc); kill -0 $MPIRUN 2>/dev/null && echo STILL_RUNNING");
    EXPECT_NE(r.out.find("ENDED_AFTER"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("STILL_RUNNING"), std::string::npos) << r.out;
    const size_t at = r.out.find("ENDED_AFTER ");
    ASSERT_NE(at, std::string::npos);
    EXPECT_LT(std::stod(r.out.substr(at + 12)), 10.0) << r.out;
}

// A rank that stops answering (SIGSTOP: alive, silent) is named when a
// message from it does not come within --mpi-timeout, and the job ends.
TEST(MpiPipeline, SilentRankEndsTheJobWithAnErrorNamingIt) {
    SKIP_WITHOUT_MPI();
    const Result r = with_server(
        2, "R1=" + rank_pid(1) + "; kill -STOP $R1; T0=$(date +%s); "
           "curl -s -m 30 http://127.0.0.1:$PORT/v1/completions -H \"Content-Type: application/json\" "
           "-d \"{\\\"prompt\\\": \\\"It is\\\", \\\"max_tokens\\\": 4}\" >/dev/null; "
           "for i in $(seq 1 150); do kill -0 $MPIRUN 2>/dev/null || break; sleep 0.1; done; "
           "kill -0 $MPIRUN 2>/dev/null && echo STILL_RUNNING; kill -CONT $R1 2>/dev/null",
        " --mpi-timeout 2");
    EXPECT_EQ(r.out.find("STILL_RUNNING"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("nothing from rank 1 within 2 s"), std::string::npos) << r.out;
}

}  // namespace
