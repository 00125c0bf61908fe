#include "cria/model/lora.h"

#include <algorithm>
#include <bit>
#include <map>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/fingerprint.h"
#include "model/arch.h"
#include "model/tensor_table.h"

namespace cria::model {

const Linear* Model::find_linear(std::string_view weight_name) const {
    // The architecture's table, declared over this model's own weights, maps
    // file names to the layers they were loaded into (nothing is written).
    TensorTable table;
    arch_->declare_tensors(hp_, table, const_cast<Weights&>(weights_));
    for (const TensorTable::Entry& e : table.entries())
        if (e.kind == TensorTable::Kind::Matrix && e.name == weight_name) return e.linear;
    return nullptr;
}

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool adapter_type_supported(ElementType t) {
    return t == ElementType::F32 || t == ElementType::F16 || t == ElementType::BF16;
}

}  // namespace

std::unique_ptr<LoraAdapter> LoraAdapter::load(const std::string& path, const Model& base) {
    return from_file(std::shared_ptr<const gguf::File>(gguf::File::open(path)), base);
}

std::unique_ptr<LoraAdapter> LoraAdapter::from_file(std::shared_ptr<const gguf::File> file, const Model& base) {
    const gguf::File& f = *file;
    const std::string& path = f.path();
    auto fail = [&](const std::string& why) { return Error(path + ": " + why); };
    const std::string type = f.get_string("general.type", "");
    if (type != "adapter") throw fail("not a LoRA adapter (general.type is '" + type + "', expected 'adapter')");
    const std::string adapter_type = f.get_string("adapter.type", "");
    if (adapter_type != "lora") throw fail("adapter.type is '" + adapter_type + "'; only 'lora' adapters are supported");
    const std::string arch = f.get_string("general.architecture", "");
    if (arch != base.hparams().arch_name)
        throw fail("the adapter is for architecture '" + arch + "', the model is '" + base.hparams().arch_name + "'");
    if (f.find("adapter.alora.invocation_tokens"))
        throw fail("activated LoRA (adapter.alora.invocation_tokens) is not supported");

    auto adapter = std::unique_ptr<LoraAdapter>(new LoraAdapter());
    adapter->file_ = std::move(file);
    adapter->path_ = path;
    adapter->fingerprint_ = gguf::content_fingerprint(f);
    adapter->alpha_ = f.get_f32("adapter.lora.alpha", 0.0f);
    if (!(adapter->alpha_ >= 0.0f) || adapter->alpha_ > 1e6f) throw fail("adapter.lora.alpha is not a sensible value");

    // Pair the tensors: NAME.lora_a and NAME.lora_b for each adapted NAME.
    std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> pairs;
    for (const gguf::TensorInfo& t : f.tensors()) {
        if (ends_with(t.name, ".lora_a"))
            pairs[t.name.substr(0, t.name.size() - 7)].first = &t;
        else if (ends_with(t.name, ".lora_b"))
            pairs[t.name.substr(0, t.name.size() - 7)].second = &t;
        else if (ends_with(t.name, "_norm.weight"))
            continue;  // as llama.cpp: adapted norms are not applied (most adapters have none)
        else
            throw fail("tensor '" + t.name + "' is not a LoRA tensor (.lora_a / .lora_b)");
    }
    if (pairs.empty()) throw fail("the adapter has no LoRA tensors");
    for (const auto& [name, ab] : pairs) {
        const auto [a, b] = ab;
        if (!a || !b) throw fail("the LoRA pair of '" + name + "' is missing its " + (a ? "lora_b" : "lora_a"));
        const gguf::TensorInfo* w = base.file().find_tensor(name);
        if (!w) throw fail("'" + name + "' is not a tensor of the base model (is this the adapter's base model?)");
        if (ends_with(name, "token_embd.weight")) throw fail("LoRA on the token embedding is not supported");
        const Linear* target = base.find_linear(name);
        if (!target) throw fail("'" + name + "' is not a linear layer's matrix; LoRA on it is not supported");
        for (const gguf::TensorInfo* t : {a, b}) {
            if (t->n_dims != 2) throw fail("'" + t->name + "' is not a matrix");
            if (!adapter_type_supported(t->type))
                throw fail("'" + t->name + "' is " + std::string(element_type_name(t->type)) +
                           "; LoRA tensors must be f32, f16 or bf16");
        }
        if (w->n_dims != 2 || a->ne[0] != w->ne[0] || b->ne[1] != w->ne[1])
            throw fail("'" + name + "': lora_a [" + std::to_string(a->ne[0]) + ", " + std::to_string(a->ne[1]) +
                       "] and lora_b [" + std::to_string(b->ne[0]) + ", " + std::to_string(b->ne[1]) +
                       "] do not fit the base matrix [" + std::to_string(w->ne[0]) + ", " + std::to_string(w->ne[1]) +
                       "] (is this the adapter's base model?)");
        if (a->ne[1] != b->ne[0] || a->ne[1] == 0)
            throw fail("'" + name + "': the ranks of lora_a (" + std::to_string(a->ne[1]) + ") and lora_b (" +
                       std::to_string(b->ne[0]) + ") differ");
        Pair p;
        p.base_name = name;
        p.target = target;
        p.rank = static_cast<int64_t>(a->ne[1]);
        p.a = ops::TensorView::contiguous(a->type, f.tensor_data(*a).data(),
                                          {static_cast<int64_t>(a->ne[0]), static_cast<int64_t>(a->ne[1])});
        p.b = ops::TensorView::contiguous(b->type, f.tensor_data(*b).data(),
                                          {static_cast<int64_t>(b->ne[0]), static_cast<int64_t>(b->ne[1])});
        adapter->pairs_.push_back(std::move(p));
    }
    return adapter;
}

float LoraAdapter::scale_for(float user_scale, int64_t rank) const {
    return alpha_ != 0.0f ? user_scale * alpha_ / static_cast<float>(rank) : user_scale;
}

void LoraSet::add(const LoraAdapter& adapter, float user_scale) {
    if (user_scale == 0.0f) return;
    // FNV-1a over (fingerprint, scale) pairs.
    uint64_t h = identity_ == 0 ? 1469598103934665603ull : identity_;
    const uint32_t scale_bits = std::bit_cast<uint32_t>(user_scale);
    for (int i = 0; i < 8; ++i) h = (h ^ (adapter.fingerprint() >> (8 * i) & 0xff)) * 1099511628211ull;
    for (int i = 0; i < 4; ++i) h = (h ^ (scale_bits >> (8 * i) & 0xff)) * 1099511628211ull;
    identity_ = h == 0 ? 1 : h;
    sources_.emplace_back(adapter.path(), user_scale);
    for (const LoraAdapter::Pair& p : adapter.pairs())
        terms_[p.target].push_back({p.a, p.b, p.rank, adapter.scale_for(user_scale, p.rank)});
}

std::vector<const Linear*> LoraSet::adapted() const {
    std::vector<const Linear*> out;
    out.reserve(terms_.size());
    for (const auto& [lin, terms] : terms_) out.push_back(lin);
    return out;
}

std::span<const LoraSet::Term> LoraSet::terms(const Linear* lin) const {
    const auto it = terms_.find(lin);
    if (it == terms_.end()) return {};
    return it->second;
}

LoraRows::LoraRows(std::span<const LoraSet* const> sets) : n_sets_(sets.size()) {
    if (sets.size() > kMaxSets)
        throw Error("a batch mixes " + std::to_string(sets.size()) + " LoRA sets; at most " +
                    std::to_string(kMaxSets) + " are supported");
    for (size_t k = 0; k < sets.size(); ++k)
        for (const Linear* lin : sets[k]->adapted())
            for (const LoraSet::Term& t : sets[k]->terms(lin)) {
                // The same pair (same tensors) under several sets is one term.
                std::vector<Term>& merged = terms_[lin];
                auto it = std::find_if(merged.begin(), merged.end(),
                                       [&](const Term& m) { return m.a.data == t.a.data && m.b.data == t.b.data; });
                if (it == merged.end()) {
                    merged.push_back({t.a, t.b, t.rank, std::vector<float>(sets.size(), 0.0f)});
                    it = merged.end() - 1;
                }
                it->scales[k] += t.scale;  // a set adding one adapter twice applies it twice
            }
}

std::span<const LoraRows::Term> LoraRows::terms(const Linear* lin) const {
    const auto it = terms_.find(lin);
    if (it == terms_.end()) return {};
    return it->second;
}

}  // namespace cria::model
