// `cria image-embd -m TEXT_MODEL --mmproj F --image IMG`: an image through a
// projector's preprocessing, encoder and projector, printed as
// {"n_tokens": N, "n_embd": E, "embd": [[E floats] x N]} — the shape of
// llama.cpp's reference embeddings, for the outside check.

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/gguf/file.h"
#include "cria/ops/cpu_ops.h"
#include "cria/vision/encoder.h"
#include "cria/vision/image.h"
#include "cria/vision/mmproj.h"
#include "cria/vision/preprocess.h"
#include "tools/command.h"

namespace cria::tools {
namespace {

// The text model's width: the projector must produce embeddings of it (llama.cpp
// refuses the pair otherwise).
int64_t text_model_width(const std::string& path) {
    const auto file = gguf::File::open(path, gguf::LoadMode::None);
    const auto width = file->get_u32(file->arch_key("embedding_length"));
    if (!width) throw Error(path + ": missing " + file->arch_key("embedding_length"));
    return *width;
}

void print_embeddings(const vision::ImageEmbeddings& e) {
    std::printf("{\"n_tokens\": %lld, \"n_embd\": %lld, \"embd\": [", static_cast<long long>(e.n_tokens),
                static_cast<long long>(e.n_embd));
    for (int64_t t = 0; t < e.n_tokens; ++t) {
        std::printf("%s[", t ? ", " : "");
        for (int64_t i = 0; i < e.n_embd; ++i)
            std::printf("%s%.9g", i ? ", " : "", static_cast<double>(e.values[static_cast<size_t>(t * e.n_embd + i)]));
        std::printf("]");
    }
    std::printf("]}\n");
}

std::function<int()> setup(CLI::App& cmd) {
    struct Options {
        std::string model;
        std::string mmproj;
        std::string image;
        int threads = 0;
        int64_t min_tokens = 0;
        int64_t max_tokens = 0;
    };
    auto opt = std::make_shared<Options>();
    cmd.add_option("-m,--model", opt->model, "The text model the embeddings are for (its width is checked)")->required();
    cmd.add_option("--mmproj", opt->mmproj, "Vision projector GGUF (llama.cpp's mmproj layout)")->required();
    cmd.add_option("--image", opt->image, "Image file: JPEG, PNG, BMP, GIF (first frame) or binary PPM")->required();
    cmd.add_option("-t,--threads", opt->threads, "Threads (default: all hardware threads)");
    cmd.add_option("--image-min-tokens", opt->min_tokens, "Dynamic-size projectors: fewest image tokens (0: default)");
    cmd.add_option("--image-max-tokens", opt->max_tokens, "Dynamic-size projectors: most image tokens (0: default)");
    return [opt]() -> int {
        const auto mmproj = vision::Mmproj::open(opt->mmproj);
        const int64_t width = text_model_width(opt->model);
        if (width != mmproj->hparams().n_output)
            throw Error("the projector outputs " + std::to_string(mmproj->hparams().n_output) +
                        " values per token but the text model's width is " + std::to_string(width));
        const auto start = std::chrono::steady_clock::now();
        const vision::RgbImage image = vision::load_image_file(opt->image);
        vision::PreprocessOptions po;
        po.min_tokens = opt->min_tokens;
        po.max_tokens = opt->max_tokens;
        const auto pre = vision::preprocess_image(image, mmproj->hparams(), po);
        const int threads = opt->threads > 0 ? opt->threads : static_cast<int>(std::thread::hardware_concurrency());
        cpu::ThreadPool pool(threads);
        ops::CpuOps ops(pool);
        const auto embd = vision::encode_image(*mmproj, pre.pixels, ops);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "image %lldx%lld -> %lldx%lld -> %lld tokens in %.1f ms (%d threads)\n",
                     static_cast<long long>(image.width), static_cast<long long>(image.height),
                     static_cast<long long>(pre.pixels.width), static_cast<long long>(pre.pixels.height),
                     static_cast<long long>(embd.n_tokens), ms, threads);
        print_embeddings(embd);
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(image_embd, "image-embd", "Print the embeddings of an image through a vision projector (mmproj) as JSON",
                      setup);

}  // namespace cria::tools
