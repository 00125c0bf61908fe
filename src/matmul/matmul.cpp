// The matmul driver: validates a product, picks the kernels of an ISA,
// quantises the activations once and splits the output into tiles that
// independent tasks compute.

#include "cria/matmul/matmul.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "cria/core/error.h"
#include "matmul/kernels.h"
#include "matmul/stretch.h"

namespace cria::matmul {

using namespace detail;

namespace {
// AmxEmulationScope's switch.
std::atomic<bool> g_amx_emulation{false};
}  // namespace

detail::AmxEmulationScope::AmxEmulationScope() : previous_(g_amx_emulation.exchange(true)) {}
detail::AmxEmulationScope::~AmxEmulationScope() { g_amx_emulation.store(previous_); }

TypeKernel detail::select_kernel(ElementType t, Isa isa, Packing packing, int64_t n_cols) {
    if (packing != Packing::None) {
        // Packed weights: the VNNI kernels where the CPU has them, else the
        // scalar reference, which reads every packing.
        // BF16 with AVX512-BF16: ggml's own math (bf16 activations) at twice
        // the FMA rate, for any number of columns, so that every product of
        // the matrix (matmul or matmul_id, decode or prefill) computes a row
        // the same way.
        if (isa >= Isa::Avx512Vnni && t == ElementType::BF16 && packing == Packing::Rows16 &&
            cpu::cpu_features().avx512_bf16) {
            if (TypeKernel k = packed_avx512_bf16_dot_kernel(); k.tile) return k;
        }
        // AMX for many columns: bit-identical to the VNNI kernels below, so a
        // row's result does not depend on the batch that computed it.
        const bool amx_emulated = g_amx_emulation.load(std::memory_order_relaxed);
        if ((isa >= Isa::Amx || amx_emulated) && n_cols >= kAmxKernelMinColumns) {
            const TypeKernel k = amx_emulated ? packed_amx_emulated_kernel(t, packing) : packed_amx_kernel(t, packing);
            if (k.tile) return k;
        }
        if (isa >= Isa::Avx512Vnni && n_cols >= kWideKernelMinColumns) {
            if (TypeKernel k = packed_avx512_wide_kernel(t, packing); k.tile) return k;
        }
        if (isa >= Isa::Avx512Vnni) {
            if (TypeKernel k = packed_avx512_kernel(t, packing); k.tile) return k;
        }
        return packed_scalar_kernel(t, packing);
    }
    // Highest ISA first; a type without a kernel there uses the next lower one.
    if (isa >= Isa::Avx512Vnni) {
        if (TypeKernel k = avx512_kernel(t); k.tile) return k;
    }
    if (isa >= Isa::Avx2) {
        if (TypeKernel k = avx2_kernel(t); k.tile) return k;
    }
    return scalar_kernel(t);
}

namespace {

// Matrix x vector is split into about kVectorTasks tasks of at least
// kMinTaskBytes of weights. Few large tasks stream best when tasks are taken
// in turns from a shared counter: every task boundary breaks a thread's
// sequential stream (the hardware and software prefetching restart), and two
// threads' tasks interleave in memory. (2 threads, 2048 x 8192: 64 KiB tasks
// reached 0.65-0.75 of the read bandwidth, 1 MiB tasks 0.81-0.92.) A decode
// product (a few vectors) instead runs in one stretch of consecutive tasks
// per thread (run_in_stretches), where a boundary breaks nothing, so it takes
// smaller tasks, kDecodeTasks of at least kMinDecodeTaskBytes: a thread that
// finishes its stretch first waits at most one small task for the other
// (on the 1-2 MiB matrices of a 1024-wide model, 16 tasks left up to ~6
// microseconds of one thread idle per product). The split cannot change a
// result: every row is computed the same way whichever task holds it.
constexpr int64_t kVectorTasks = 16;
constexpr int64_t kMinTaskBytes = 64 * 1024;
constexpr int64_t kDecodeTasks = 64;
constexpr int64_t kMinDecodeTaskBytes = 16 * 1024;
// Up to this many activation vectors are quantised by the calling thread.
constexpr int64_t kCallerQuantizeVectors = 8;
// Activation vectors one task covers in matrix x matrix: their quantised form
// (about 2 KiB each at k = 2048) stays in L2 while the task's rows stream.
constexpr int64_t kColumnsPerTask = 64;

struct AlignedFree {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using ActivationBuffer = std::unique_ptr<uint8_t[], AlignedFree>;

// The activation buffer of the last finished plan of this thread, kept for
// the next one. Large products (a vision encoder's attention: 64 MiB of
// activations per head) otherwise get a fresh mapping each time and fault
// in every page again (7.8 M page faults for one 896x896 image). A plan
// takes the buffer over (so two plans alive on one thread never share it)
// and gives it back when it ends; the bigger of two buffers is kept.
struct SpareBuffer {
    ActivationBuffer data;
    size_t bytes = 0;
};
thread_local SpareBuffer t_spare;

ActivationBuffer take_buffer(size_t bytes, size_t& capacity) {
    if (t_spare.data && t_spare.bytes >= bytes) {
        capacity = t_spare.bytes;
        t_spare.bytes = 0;
        return std::move(t_spare.data);
    }
    capacity = bytes;
    return ActivationBuffer(static_cast<uint8_t*>(::operator new[](std::max<size_t>(bytes, 1), std::align_val_t{64})));
}

void give_back(ActivationBuffer buffer, size_t capacity) {
    if (buffer && capacity >= t_spare.bytes) {
        t_spare.data = std::move(buffer);
        t_spare.bytes = capacity;
    }
}

}  // namespace

bool supports_weight_type(ElementType t) { return scalar_kernel(t).tile != nullptr; }

void validate(const MatmulArgs& a) {
    const auto fail = [](const std::string& why) { throw Error("matmul: " + why); };
    const ElementTypeInfo* info = element_type_info(a.w.type);
    if (!info) fail("unknown weight type id " + std::to_string(static_cast<uint32_t>(a.w.type)));
    if (!supports_weight_type(a.w.type)) fail("no kernels for weight type " + std::string(info->name));
    if (a.w.k <= 0 || a.w.rows <= 0) fail("empty weight matrix");
    const auto row_bytes = row_size_bytes(a.w.type, static_cast<uint64_t>(a.w.k));
    if (!row_bytes)
        fail("row length " + std::to_string(a.w.k) + " is not a whole number of " + std::string(info->name) +
             " blocks of " + std::to_string(info->block_size));
    if (activation_format(a.w.type) == ActivationFormat::Q8_K && a.w.k % 256 != 0)
        fail("row length must be a multiple of 256");
    if (a.w.packing == Packing::None) {
        if (a.w.rows > 1 && a.w.row_stride < *row_bytes) fail("row stride is smaller than a row");
    } else {
        if (!supports_packing(a.w.type, a.w.packing))
            fail("weight type " + std::string(info->name) + " has no such packed layout");
        if (packed_group_bytes(a.w.type, a.w.k, a.w.packing) == 0) fail("row length cannot be packed");
        if (a.r0 % packing_rows(a.w.packing) != 0)
            fail("a product of packed weights must start at a group of " +
                 std::to_string(packing_rows(a.w.packing)) + " rows");
    }
    if (!a.w.data || !a.x || !a.y) fail("null data pointer");
    if (a.combine && !a.x2) fail("combine needs its second input x2");
    if (a.n <= 0) fail("no activation vectors");
    if (a.r0 < 0 || a.r0 > a.r1 || a.r1 > a.w.rows) fail("output row range out of bounds");
    if (a.n > 1 && a.x_stride < a.w.k) fail("activation stride is smaller than k");
    if (a.n > 1 && a.y_stride < a.r1) fail("output stride is smaller than the rows written");
}

struct MatmulPlan::Impl {
    MatmulArgs args;
    TypeKernel kernel;
    ActivationFormat format;
    size_t act_row_bytes = 0;
    ActivationBuffer act;
    size_t act_capacity = 0;
    int64_t rows_per_task = 0;
    int64_t cols_per_task = 0;
    int64_t row_tasks = 0;
    int64_t col_tasks = 0;
    size_t group_bytes = 0;  // packed weights: bytes per group of packing_rows rows
    int64_t group_rows = 1;  // packed weights: packing_rows
};

MatmulPlan::MatmulPlan(const MatmulArgs& args, Isa isa) : impl_(new Impl) {
    std::unique_ptr<Impl> guard(impl_);
    validate(args);
    if (!cpu::isa_supported(isa))
        throw Error("matmul: this CPU cannot run " + std::string(cpu::isa_name(isa)) + " kernels");
    Impl& p = *impl_;
    p.args = args;
    p.kernel = select_kernel(args.w.type, isa, args.w.packing, args.n);
    if (args.w.packing != Packing::None) {
        p.group_bytes = packed_group_bytes(args.w.type, args.w.k, args.w.packing);
        p.group_rows = packing_rows(args.w.packing);
    }
    p.format = p.kernel.act;
    p.act_row_bytes = activation_row_bytes(p.format, args.w.k);
    const size_t total = p.act_row_bytes * static_cast<size_t>(args.n);
    p.act = take_buffer(total, p.act_capacity);

    const int64_t rows = args.r1 - args.r0;
    const int64_t mr = p.kernel.max_rows;
    // The same split for one activation vector and for many: for a few
    // (verify batches) the product is still bound by memory; for many, each
    // task meets its columns 16 rows at a time, so task size does not matter.
    const int64_t row_bytes = static_cast<int64_t>(*row_size_bytes(args.w.type, static_cast<uint64_t>(args.w.k)));
    const bool decode = args.n <= kCallerQuantizeVectors;
    const int64_t min_rows = std::max<int64_t>(1, (decode ? kMinDecodeTaskBytes : kMinTaskBytes) / row_bytes);
    const int64_t target_tasks = decode ? kDecodeTasks : kVectorTasks;
    int64_t rows_per_task = std::max(min_rows, (rows + target_tasks - 1) / target_tasks);
    rows_per_task = std::max(mr, (rows_per_task + mr - 1) / mr * mr);
    p.rows_per_task = rows_per_task;
    p.cols_per_task = kColumnsPerTask;
    p.row_tasks = rows == 0 ? 0 : (rows + rows_per_task - 1) / rows_per_task;
    p.col_tasks = (args.n + kColumnsPerTask - 1) / kColumnsPerTask;
    guard.release();
}

MatmulPlan::~MatmulPlan() {
    give_back(std::move(impl_->act), impl_->act_capacity);
    delete impl_;
}

int64_t MatmulPlan::quantize_tasks() const { return impl_->args.n; }

void MatmulPlan::run_quantize_task(int64_t task) {
    const Impl& p = *impl_;
    const MatmulArgs& a = p.args;
    uint8_t* out = p.act.get() + static_cast<size_t>(task) * p.act_row_bytes;
    if (!a.combine) {
        prepare_activation_row(p.format, a.x + task * a.x_stride, a.w.k, out);
        return;
    }
    // One row of the combined activations per thread at a time (k floats,
    // 32 KiB at k = 8192: it stays in L1/L2 between the two steps).
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(a.w.k));
    a.combine(a.x + task * a.x_stride, a.x2 + task * a.x_stride, row.data(), a.w.k);
    prepare_activation_row(p.format, row.data(), a.w.k, out);
}

int64_t MatmulPlan::compute_tasks() const { return impl_->row_tasks * impl_->col_tasks; }

void MatmulPlan::run_compute_task(int64_t task) {
    const Impl& p = *impl_;
    const MatmulArgs& a = p.args;
    // Row chunks vary fastest, so concurrent tasks share the same activations.
    const int64_t row_task = task % p.row_tasks;
    const int64_t col_task = task / p.row_tasks;
    const int64_t row_begin = a.r0 + row_task * p.rows_per_task;
    const int64_t row_end = std::min(a.r1, row_begin + p.rows_per_task);
    const int64_t col_begin = col_task * p.cols_per_task;
    const int64_t col_end = std::min(a.n, col_begin + p.cols_per_task);
    const auto* w = static_cast<const uint8_t*>(a.w.data);
    const int64_t y_stride = a.n > 1 ? a.y_stride : 0;

    Tile t{};
    t.k = a.w.k;
    t.w_stride = a.w.packing == Packing::None ? a.w.row_stride : p.group_bytes;
    t.a_stride = p.act_row_bytes;
    t.y_stride = static_cast<size_t>(y_stride);
    // Each group of max_rows weight rows stays in L1 while it meets every
    // column group of this task.
    for (int64_t r = row_begin; r < row_end; r += p.kernel.max_rows) {
        t.n_rows = static_cast<int>(std::min<int64_t>(p.kernel.max_rows, row_end - r));
        t.w = a.w.packing == Packing::None ? w + static_cast<size_t>(r) * a.w.row_stride
                                           : w + static_cast<size_t>(r / p.group_rows) * p.group_bytes;
        for (int64_t c = col_begin; c < col_end; c += p.kernel.max_cols) {
            t.n_cols = static_cast<int>(std::min<int64_t>(p.kernel.max_cols, col_end - c));
            t.a = p.act.get() + static_cast<size_t>(c) * p.act_row_bytes;
            t.y = a.y + c * y_stride + r;
            p.kernel.tile(t);
        }
    }
}

namespace {

// The compute tasks of a product of a few activation vectors (a decode step),
// in one contiguous stretch of tasks per thread: thread i walks stretch i
// front to back, then helps finish the others from their back ends. A
// thread's weights are then one sequential stream for the whole product,
// which the prefetchers follow across task boundaries, and a helper does not
// interleave its reads with the owner's. (Tasks taken in turns from one
// shared counter interleave the two threads' reads in 64-144 KiB pieces and
// restart each thread's stream at every piece, which costs most on the small
// matrices of 1024-wide models, 1-2 MiB each.) A descheduled thread's stretch
// is still finished by the others, task by task. Which thread computes a row
// cannot change its value.
void run_in_stretches(MatmulPlan& plan, cpu::ThreadPool& pool) {
    const int64_t tasks = plan.compute_tasks();
    if (tasks > int64_t{0xFFFFFFFF}) {  // beyond the packed ends (no real matrix has so many tasks)
        pool.parallel_for(tasks, [&](int64_t task, int) { plan.run_compute_task(task); });
        return;
    }
    const int64_t stretches = std::min<int64_t>(pool.size(), tasks);
    std::unique_ptr<Stretch[]> stretch(new Stretch[static_cast<size_t>(stretches)]);
    for (int64_t i = 0; i < stretches; ++i) stretch[i].reset(tasks * i / stretches, tasks * (i + 1) / stretches);
    pool.parallel_for(
        stretches,
        [&](int64_t own, int) {
            for (int64_t t = stretch[own].take_front(); t >= 0; t = stretch[own].take_front()) plan.run_compute_task(t);
            for (int64_t i = 1; i < stretches; ++i) {
                Stretch& other = stretch[(own + i) % stretches];
                for (int64_t t = other.take_back(); t >= 0; t = other.take_back()) plan.run_compute_task(t);
            }
        },
        1);
}

// A product of many activation vectors (prefill) as one job of the pool:
// first tasks that quantise kQuantizeRowsPerTask vectors each, then the
// compute tasks, claimed kChunksPerThread chunks per thread. Tasks are claimed in index order, so
// when a thread claims a compute task every quantisation it reads has been
// claimed already; it waits (a few microseconds at most, unless the peer was
// descheduled) only for those still running, where two jobs joined the pool
// between the two phases (every thread idle until the slowest quantisation
// ended). Smaller chunks also split the end of the product finer: a thread
// that runs out of tasks waits for at most one chunk, 1/32 of the product at
// 2 threads, where chunks of a whole 64-column group (1/8th) left up to one
// eighth of it to one thread. (One task per claim, 1/128th, measured slower
// on 2048 x 2048 Q4_0: the threads took turns on row chunks, each restarting
// its weight stream every 147 KiB.) Which thread computes a tile cannot
// change its value.
// Neither kind of task throws, so a claimed quantisation is never skipped by
// the pool's cancellation while a compute task waits for it.
constexpr int64_t kQuantizeRowsPerTask = 8;
constexpr int64_t kChunksPerThread = 16;
static_assert(kColumnsPerTask % kQuantizeRowsPerTask == 0, "a quantisation task feeds one column group");

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void quantize_and_compute_in_one_job(MatmulPlan& plan, int64_t n, cpu::ThreadPool& pool) {
    const int64_t compute = plan.compute_tasks();
    const int64_t col_groups = (n + kColumnsPerTask - 1) / kColumnsPerTask;
    if (compute == 0 || compute % col_groups != 0) {  // no rows: keep the two plain phases
        pool.parallel_for(plan.quantize_tasks(), [&](int64_t task, int) { plan.run_quantize_task(task); });
        pool.parallel_for(compute, [&](int64_t task, int) { plan.run_compute_task(task); });
        return;
    }
    const int64_t row_tasks = compute / col_groups;  // compute tasks vary the row chunk fastest
    const int64_t quantize = (n + kQuantizeRowsPerTask - 1) / kQuantizeRowsPerTask;
    // Vectors quantised so far, per column group.
    std::unique_ptr<std::atomic<int64_t>[]> ready(new std::atomic<int64_t>[static_cast<size_t>(col_groups)]);
    for (int64_t g = 0; g < col_groups; ++g) ready[g].store(0, std::memory_order_relaxed);
    pool.parallel_for(
        quantize + compute,
        [&](int64_t task, int) {
            if (task < quantize) {
                const int64_t begin = task * kQuantizeRowsPerTask;
                const int64_t end = std::min(n, begin + kQuantizeRowsPerTask);
                for (int64_t v = begin; v < end; ++v) plan.run_quantize_task(v);
                ready[begin / kColumnsPerTask].fetch_add(end - begin, std::memory_order_release);
                return;
            }
            const int64_t c = task - quantize;
            const int64_t group = c / row_tasks;
            const int64_t needed = std::min(kColumnsPerTask, n - group * kColumnsPerTask);
            // Spin briefly, then yield: with more threads than free cores the
            // quantising peer may be descheduled, and spinning would only
            // take its core away.
            for (int spins = 0; ready[group].load(std::memory_order_acquire) < needed; ++spins) {
                if (spins < 4096) {
                    spin_pause();
                } else {
                    std::this_thread::yield();
                }
            }
            plan.run_compute_task(c);
        },
        std::max<int64_t>(1, (quantize + compute) / (kChunksPerThread * pool.size())));
}

}  // namespace

void matmul(const MatmulArgs& args, Isa isa, cpu::ThreadPool* pool) {
    MatmulPlan plan(args, isa);
    if (!pool || pool->size() == 1) {
        for (int64_t i = 0; i < plan.quantize_tasks(); ++i) plan.run_quantize_task(i);
        for (int64_t i = 0; i < plan.compute_tasks(); ++i) plan.run_compute_task(i);
        return;
    }
    // A few activation vectors (decode, verify batches) are quantised in
    // microseconds: cheaper here than a second dispatch and join of the pool.
    // Their product streams the weights once, in one stretch per thread.
    if (plan.quantize_tasks() <= kCallerQuantizeVectors) {
        for (int64_t i = 0; i < plan.quantize_tasks(); ++i) plan.run_quantize_task(i);
        run_in_stretches(plan, *pool);
        return;
    }
    quantize_and_compute_in_one_job(plan, args.n, *pool);
}

void matmul(const MatmulArgs& args) { matmul(args, cpu::best_isa(), nullptr); }
void matmul(const MatmulArgs& args, cpu::ThreadPool& pool) { matmul(args, cpu::best_isa(), &pool); }

}  // namespace cria::matmul
