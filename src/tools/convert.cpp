// `cria convert HF_DIR -o OUT.gguf`: a Hugging Face checkpoint to GGUF,
// without Python (see convert/convert.h for what is read and written).

#include <cstdio>
#include <memory>
#include <string>

#include "cria/convert/convert.h"
#include "cria/core/error.h"
#include "tools/command.h"

namespace cria::tools {
namespace {

std::function<int()> setup(CLI::App& cmd) {
    struct Options {
        std::string dir, output, outtype = "f16", name;
    };
    auto opt = std::make_shared<Options>();
    cmd.add_option("dir", opt->dir, "Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer files)")
        ->required();
    cmd.add_option("-o,--output", opt->output, "GGUF file to write")->required();
    cmd.add_option("--outtype", opt->outtype, "f32, f16, bf16 or q8_0")->capture_default_str();
    cmd.add_option("--name", opt->name, "general.name (default: the directory's name)");
    return [opt]() -> int {
        convert::ConvertOptions o;
        const auto type = element_type_from_name(opt->outtype);
        if (!type || (*type != ElementType::F32 && *type != ElementType::F16 && *type != ElementType::BF16 &&
                      *type != ElementType::Q8_0))
            throw Error("--outtype '" + opt->outtype + "': choose f32, f16, bf16 or q8_0");
        o.outtype = *type;
        o.name = opt->name;
        const auto s = convert::convert(opt->dir, opt->output, o, [](size_t done, size_t total, const std::string& name) {
            std::fprintf(stderr, "\r[%4zu/%zu] %-50.50s", done, total, name.c_str());
            if (done == total) std::fprintf(stderr, "\n");
        });
        std::fprintf(stderr, "%s -> %s: %llu tensors, %llu parameters, %.2f MiB of tensor data written to %s\n",
                     s.hf_architecture.c_str(), s.gguf_architecture.c_str(), static_cast<unsigned long long>(s.n_tensors),
                     static_cast<unsigned long long>(s.n_parameters), s.bytes_written / 1048576.0, opt->output.c_str());
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(convert, "convert", "Convert a Hugging Face checkpoint (safetensors) to GGUF", setup);

}  // namespace cria::tools
