// `cria convert HF_DIR -o OUT.gguf`: a Hugging Face checkpoint to GGUF,
// without Python (see convert/convert.h for what is read and written);
// `cria convert --lora PEFT_DIR --base BASE.gguf -o OUT.gguf`: a PEFT LoRA
// adapter to llama.cpp's adapter GGUF (convert/lora_convert.h).

#include <cstdio>
#include <memory>
#include <string>

#include "cria/convert/convert.h"
#include "cria/convert/lora_convert.h"
#include "cria/core/error.h"
#include "tools/command.h"

namespace cria::tools {
namespace {

std::function<int()> setup(CLI::App& cmd) {
    struct Options {
        std::string dir, output, outtype = "f16", name, lora, base;
    };
    auto opt = std::make_shared<Options>();
    cmd.add_option("dir", opt->dir, "Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer files)");
    cmd.add_option("--lora", opt->lora,
                   "PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors) to convert to an "
                   "adapter GGUF (llama.cpp's convert_lora_to_gguf.py); needs --base");
    cmd.add_option("--base", opt->base, "with --lora: the base model's GGUF (architecture, names and shapes)");
    cmd.add_option("-o,--output", opt->output, "GGUF file to write")->required();
    cmd.add_option("--outtype", opt->outtype, "f32, f16, bf16 or q8_0")->capture_default_str();
    cmd.add_option("--name", opt->name, "general.name (default: the directory's name)");
    return [opt]() -> int {
        if (!opt->lora.empty()) {
            if (!opt->dir.empty()) throw Error("convert: give either a checkpoint directory or --lora DIR, not both");
            if (opt->base.empty()) throw Error("convert --lora needs --base BASE.gguf (the model the adapter was trained on)");
            const auto type = element_type_from_name(opt->outtype);
            if (!type || (*type != ElementType::F32 && *type != ElementType::F16 && *type != ElementType::BF16))
                throw Error("--outtype '" + opt->outtype + "': an adapter is f32, f16 or bf16");
            const auto s = convert::convert_lora(opt->lora, opt->base, opt->output, {.outtype = *type});
            std::fprintf(stderr, "LoRA adapter (%s, rank %u, alpha %g): %llu pairs, %.2f MiB of tensor data written to %s\n",
                         s.architecture.c_str(), s.rank, static_cast<double>(s.alpha),
                         static_cast<unsigned long long>(s.n_pairs), s.bytes_written / 1048576.0, opt->output.c_str());
            return 0;
        }
        if (opt->dir.empty()) throw Error("convert: give a Hugging Face checkpoint directory (or --lora DIR --base BASE.gguf)");
        if (!opt->base.empty()) throw Error("convert: --base goes with --lora");
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

CRIA_REGISTER_COMMAND(convert, "convert", "Convert a Hugging Face checkpoint or a PEFT LoRA adapter (safetensors) to GGUF", setup);

}  // namespace cria::tools
