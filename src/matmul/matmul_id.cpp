// The indexed expert product (cria/matmul/matmul_id.h): pairs grouped by
// expert, activations quantised once per source vector, then one task list of
// output tiles over every active expert, run with the tile kernels of matmul.

#include "cria/matmul/matmul_id.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "cria/core/error.h"
#include "cria/matmul/matmul.h"
#include "matmul/kernels.h"

namespace cria::matmul {

using namespace detail;

namespace {

// As in matmul.cpp: the weights of the active experts are split into about
// kTargetTasks tasks of at least kMinTaskBytes, so both threads stream long
// sequential runs and a descheduled thread's share can be taken over; a
// task covers at most kColumnsPerTask pairs (their activations stay in L2).
constexpr int64_t kTargetTasks = 16;
constexpr int64_t kMinTaskBytes = 64 * 1024;
constexpr int64_t kColumnsPerTask = 64;
// A task's outputs (rows x columns floats) stay in the thread's scratch
// until they are copied to the pairs' rows: at most 256 KiB, within L2.
constexpr int64_t kMaxRowsPerTask = 1024;
// Up to this many source vectors are quantised by the calling thread: a
// dispatch of the pool costs more than quantising them.
constexpr int64_t kCallerQuantizeVectors = 8;

struct AlignedFree {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
};

// A 64-byte aligned byte buffer that only grows.
class AlignedBytes {
public:
    uint8_t* reserve(size_t n) {
        if (n > size_) {
            data_.reset(static_cast<uint8_t*>(::operator new[](n, std::align_val_t{64})));
            size_ = n;
        }
        return data_.get();
    }
    size_t size() const { return size_; }

private:
    std::unique_ptr<uint8_t[], AlignedFree> data_;
    size_t size_ = 0;
};

// One task: rows [r0, r1) of one expert times its sorted columns [c0, c1).
struct Task {
    int64_t expert, r0, r1, c0, c1;
};

}  // namespace

struct MatmulIdWorkspace::Buffers {
    std::vector<int64_t> start;            // n_expert + 1: first sorted column of each expert
    std::vector<int64_t> column_of_pair;   // pair (t * n_used + j) -> sorted column
    std::vector<int64_t> pair_of_column;   // sorted column -> pair
    std::vector<Task> tasks;
    AlignedBytes act;      // quantised activations, one row per sorted column
    AlignedBytes scratch;  // per thread: one tile of outputs, scattered to the pairs' rows after
};

MatmulIdWorkspace::MatmulIdWorkspace() : b_(std::make_unique<Buffers>()) {}
MatmulIdWorkspace::~MatmulIdWorkspace() = default;

size_t MatmulIdWorkspace::bytes() const {
    return b_->act.size() + b_->scratch.size() +
           (b_->start.capacity() + b_->column_of_pair.capacity() + b_->pair_of_column.capacity()) * sizeof(int64_t) +
           b_->tasks.capacity() * sizeof(Task);
}

void validate(const MatmulIdArgs& a) {
    const auto fail = [](const std::string& why) { throw Error("matmul_id: " + why); };
    const ExpertMatrices& w = a.w;
    const ElementTypeInfo* info = element_type_info(w.type);
    if (!info) fail("unknown weight type id " + std::to_string(static_cast<uint32_t>(w.type)));
    if (!supports_weight_type(w.type)) fail("no kernels for weight type " + std::string(info->name));
    if (w.k <= 0 || w.rows <= 0 || w.n_expert <= 0) fail("empty expert matrices");
    const auto row_bytes = row_size_bytes(w.type, static_cast<uint64_t>(w.k));
    if (!row_bytes)
        fail("row length " + std::to_string(w.k) + " is not a whole number of " + std::string(info->name) +
             " blocks of " + std::to_string(info->block_size));
    if (activation_format(w.type) == ActivationFormat::Q8_K && w.k % 256 != 0) fail("row length must be a multiple of 256");
    if (w.packing == Packing::None) {
        if (w.rows > 1 && w.row_stride < *row_bytes) fail("row stride is smaller than a row");
        if (w.n_expert > 1 && w.expert_stride < w.row_stride * static_cast<size_t>(w.rows - 1) + *row_bytes)
            fail("expert stride is smaller than an expert's matrix");
    } else {
        if (!supports_packing(w.type, w.packing))
            fail("weight type " + std::string(info->name) + " has no such packed layout");
        if (packed_group_bytes(w.type, w.k, w.packing) == 0) fail("row length cannot be packed");
        if (w.n_expert > 1 && w.expert_stride < packed_bytes(w.type, w.rows, w.k, w.packing))
            fail("expert stride is smaller than an expert's packed matrix");
    }
    if (a.n_used <= 0 || a.n_tokens < 0) fail("n_used must be positive and n_tokens not negative");
    if (a.n_tokens == 0) return;
    if (!w.data || !a.x || !a.y || !a.ids) fail("null data pointer");
    if (a.x_per_token != 1 && a.x_per_token != a.n_used) fail("x_per_token must be 1 or n_used");
    if (a.x_per_token > 1 && a.x_stride < w.k) fail("input stride is smaller than k");
    if (a.n_tokens > 1 && a.x_token_stride < a.x_per_token * w.k) fail("token input stride is too small");
    if (a.n_used > 1 && a.y_stride < w.rows) fail("output stride is smaller than the rows");
    if (a.n_tokens > 1 && a.y_token_stride < a.n_used * w.rows) fail("token output stride is too small");
    for (int64_t i = 0; i < a.n_used * a.n_tokens; ++i)
        if (a.ids[i] < 0 || a.ids[i] >= w.n_expert)
            fail("expert id " + std::to_string(a.ids[i]) + " is outside [0, " + std::to_string(w.n_expert) + ")");
}

void matmul_id(const MatmulIdArgs& a, MatmulIdWorkspace& ws, Isa isa, cpu::ThreadPool* pool) {
    validate(a);
    if (!cpu::isa_supported(isa))
        throw Error("matmul_id: this CPU cannot run " + std::string(cpu::isa_name(isa)) + " kernels");
    if (a.n_tokens == 0) return;
    MatmulIdWorkspace::Buffers& b = *ws.b_;
    const ExpertMatrices& w = a.w;
    const int64_t n_used = a.n_used, n_pairs = n_used * a.n_tokens, n_expert = w.n_expert;
    const TypeKernel kernel = select_kernel(w.type, isa, w.packing);
    const ActivationFormat format = kernel.act;
    const size_t act_row_bytes = activation_row_bytes(format, w.k);
    const bool packed = w.packing != Packing::None;
    const size_t group_bytes = packed ? packed_group_bytes(w.type, w.k, w.packing) : 0;
    const int n_threads = pool ? pool->size() : 1;

    // The pairs of each expert, in pair order (a stable counting sort).
    b.start.assign(static_cast<size_t>(n_expert) + 1, 0);
    for (int64_t i = 0; i < n_pairs; ++i) ++b.start[static_cast<size_t>(a.ids[i]) + 1];
    for (int64_t e = 0; e < n_expert; ++e) b.start[static_cast<size_t>(e) + 1] += b.start[static_cast<size_t>(e)];
    b.column_of_pair.resize(static_cast<size_t>(n_pairs));
    b.pair_of_column.resize(static_cast<size_t>(n_pairs));
    for (int64_t i = 0; i < n_pairs; ++i) {
        const int64_t c = b.start[static_cast<size_t>(a.ids[i])]++;
        b.column_of_pair[static_cast<size_t>(i)] = c;
        b.pair_of_column[static_cast<size_t>(c)] = i;
    }
    for (int64_t e = n_expert; e > 0; --e) b.start[static_cast<size_t>(e)] = b.start[static_cast<size_t>(e) - 1];
    b.start[0] = 0;

    // The task list: per active expert, row blocks (fastest) times column blocks.
    const int64_t mr = kernel.max_rows;
    const int64_t row_bytes = static_cast<int64_t>(*row_size_bytes(w.type, static_cast<uint64_t>(w.k)));
    int64_t active = 0;
    for (int64_t e = 0; e < n_expert; ++e) active += b.start[static_cast<size_t>(e) + 1] > b.start[static_cast<size_t>(e)];
    const int64_t task_bytes = std::max(kMinTaskBytes, active * w.rows * row_bytes / kTargetTasks);
    int64_t rows_per_task = std::max<int64_t>(1, task_bytes / row_bytes);
    rows_per_task = std::min({(rows_per_task + mr - 1) / mr * mr, (w.rows + mr - 1) / mr * mr, kMaxRowsPerTask / mr * mr});
    b.tasks.clear();
    for (int64_t e = 0; e < n_expert; ++e) {
        const int64_t c_begin = b.start[static_cast<size_t>(e)], c_end = b.start[static_cast<size_t>(e) + 1];
        for (int64_t c = c_begin; c < c_end; c += kColumnsPerTask)
            for (int64_t r = 0; r < w.rows; r += rows_per_task)
                b.tasks.push_back({e, r, std::min(w.rows, r + rows_per_task), c, std::min(c_end, c + kColumnsPerTask)});
    }

    // Activations: one quantisation per source vector, into the sorted column
    // of its first pair; a vector shared by a token's slots is then copied to
    // the columns of its other pairs.
    uint8_t* act = b.act.reserve(act_row_bytes * static_cast<size_t>(n_pairs));
    const bool shared_input = a.x_per_token == 1;
    const auto column_act = [&](int64_t pair) {
        return act + static_cast<size_t>(b.column_of_pair[static_cast<size_t>(pair)]) * act_row_bytes;
    };
    const auto quantize_token = [&](int64_t t, int) {
        const float* xt = a.x + t * a.x_token_stride;
        for (int64_t j = 0; j < n_used; ++j) {
            uint8_t* dst = column_act(t * n_used + j);
            if (!shared_input || j == 0)
                prepare_activation_row(format, xt + (shared_input ? 0 : j * a.x_stride), w.k, dst);
            else
                std::memcpy(dst, column_act(t * n_used), act_row_bytes);
        }
    };
    const int64_t sources = shared_input ? a.n_tokens : n_pairs;
    if (!pool || pool->size() == 1 || sources <= kCallerQuantizeVectors) {
        for (int64_t t = 0; t < a.n_tokens; ++t) quantize_token(t, 0);
    } else {
        pool->parallel_for(a.n_tokens, quantize_token);
    }

    // Outputs: a task of one column (decode) writes straight to its pair's
    // row; a wider task writes its tiles to the thread's scratch, then each
    // column's rows to its pair's row in one copy (one copy per tile column
    // cost a quarter of the time of a short-k product such as down).
    const int64_t nc = kernel.max_cols;
    const size_t scratch_floats = static_cast<size_t>(rows_per_task * kColumnsPerTask);
    auto* scratch = reinterpret_cast<float*>(b.scratch.reserve(scratch_floats * sizeof(float) * static_cast<size_t>(n_threads)));
    const auto pair_output = [&](int64_t c) {
        const int64_t i = b.pair_of_column[static_cast<size_t>(c)];
        return a.y + (i / n_used) * a.y_token_stride + (i % n_used) * a.y_stride;
    };
    const auto* base = static_cast<const uint8_t*>(w.data);
    const auto compute = [&](int64_t task, int thread) {
        const Task& tk = b.tasks[static_cast<size_t>(task)];
        const uint8_t* we = base + static_cast<size_t>(tk.expert) * w.expert_stride;
        const bool direct = tk.c1 - tk.c0 == 1;
        const int64_t ld = tk.r1 - tk.r0;  // scratch floats per column
        float* task_out = scratch + static_cast<size_t>(thread) * scratch_floats;
        Tile t{};
        t.k = w.k;
        t.w_stride = packed ? group_bytes : w.row_stride;
        t.a_stride = act_row_bytes;
        t.y_stride = direct ? 0 : static_cast<size_t>(ld);
        for (int64_t r = tk.r0; r < tk.r1; r += mr) {
            t.n_rows = static_cast<int>(std::min(mr, tk.r1 - r));
            t.w = packed ? we + static_cast<size_t>(r / packing_rows(w.packing)) * group_bytes
                         : we + static_cast<size_t>(r) * w.row_stride;
            for (int64_t c = tk.c0; c < tk.c1; c += nc) {
                t.n_cols = static_cast<int>(std::min(nc, tk.c1 - c));
                t.a = act + static_cast<size_t>(c) * act_row_bytes;
                t.y = direct ? pair_output(c) + r : task_out + (c - tk.c0) * ld + (r - tk.r0);
                kernel.tile(t);
            }
        }
        if (!direct)
            for (int64_t c = tk.c0; c < tk.c1; ++c)
                std::memcpy(pair_output(c) + tk.r0, task_out + (c - tk.c0) * ld, static_cast<size_t>(ld) * sizeof(float));
    };
    const auto n_tasks = static_cast<int64_t>(b.tasks.size());
    if (!pool || pool->size() == 1) {
        for (int64_t i = 0; i < n_tasks; ++i) compute(i, 0);
    } else {
        pool->parallel_for(n_tasks, compute);
    }
}

}  // namespace cria::matmul
