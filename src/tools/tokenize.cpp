// cria tokenize: show how a model's tokenizer cuts text into tokens.
//
//   cria tokenize -m MODEL (-p TEXT | -f FILE) [--ids] [--no-bos] [--parse-special]
//
// One line per token, `id -> 'piece'`; with --ids a JSON array of the ids on
// one line. Works on vocab-only GGUF files.

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cria/core/error.h"
#include "cria/vocab/vocab.h"
#include "tools/command.h"

namespace {

struct TokenizeOptions {
    std::string model;
    std::string prompt;
    std::string file;
    bool ids = false;
    bool no_bos = false;
    bool parse_special = false;
};

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw cria::Error("cannot open '" + path + "' for reading");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<TokenizeOptions>();
    cmd.add_option("-m,--model", opt->model, "GGUF file with the tokenizer (weights are not read)")->required();
    auto* prompt = cmd.add_option("-p,--prompt", opt->prompt, "Text to tokenize");
    auto* file = cmd.add_option("-f,--file", opt->file, "File whose contents to tokenize");
    prompt->excludes(file);
    cmd.add_flag("--ids", opt->ids, "Print only a JSON array of the token ids");
    cmd.add_flag("--no-bos", opt->no_bos, "Do not add the BOS / EOS tokens the model asks for");
    cmd.add_flag("--parse-special", opt->parse_special, "Turn the text of control tokens into those tokens");
    return [opt, prompt, file]() -> int {
        if (prompt->count() == 0 && file->count() == 0) throw cria::Error("give the text with -p TEXT or -f FILE");
        const std::string text = file->count() ? read_text_file(opt->file) : opt->prompt;
        const cria::vocab::Vocab vocab = cria::vocab::Vocab::load(opt->model);
        for (const std::string& w : vocab.warnings()) std::fprintf(stderr, "cria tokenize: warning: %s\n", w.c_str());
        const auto ids = vocab.tokenize(text, !opt->no_bos, opt->parse_special);

        std::string out;
        out.reserve(ids.size() * 8);
        if (opt->ids) {
            out += '[';
            for (size_t i = 0; i < ids.size(); ++i) {
                if (i) out += ", ";
                out += std::to_string(ids[i]);
            }
            out += "]\n";
        } else {
            for (const auto id : ids) {
                out += std::to_string(id);
                out += " -> '";
                out += vocab.token_to_piece(id, true);
                out += "'\n";
            }
        }
        std::fwrite(out.data(), 1, out.size(), stdout);
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(tokenize, "tokenize", "Show the tokens a model's tokenizer makes of a text", setup);
