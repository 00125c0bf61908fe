// How long a hidden state spends between two pipeline ranks: a ping-pong of
// the residual stream of T tokens (T x n_embd floats) between ranks 0 and 1,
// through the same posted sends and polled receives the pipeline stages use
// (distributed::World). Prints the one-way time (half the round trip).
//
//   mpirun -np 2 build/release/bench/bench_mpi_hidden_state [n_embd=2048] [tokens=1] [rounds=2000]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cria/distributed/mpi_world.h"

int main(int argc, char** argv) {
    cria::distributed::World world(&argc, &argv, 30.0);
    if (world.size() != 2) {
        if (world.rank() == 0) std::fprintf(stderr, "run with mpirun -np 2\n");
        return 1;
    }
    const long n_embd = argc > 1 ? std::atol(argv[1]) : 2048;
    const long tokens = argc > 2 ? std::atol(argv[2]) : 1;
    const int rounds = argc > 3 ? std::atoi(argv[3]) : 2000;
    std::vector<float> stream(static_cast<size_t>(n_embd * tokens), 1.0f);
    const auto bytes = std::as_writable_bytes(std::span<float>(stream));
    const int peer = 1 - world.rank();
    std::vector<double> one_way_us;
    for (int i = 0; i < rounds + 50; ++i) {  // the first 50 warm the connection up
        const auto t0 = std::chrono::steady_clock::now();
        if (world.rank() == 0) {
            auto s = world.send(peer, cria::distributed::Tag::Stream, bytes);
            world.wait(s, "ping");
            auto r = world.receive(peer, cria::distributed::Tag::Stream, bytes);
            world.wait(r, "pong");
        } else {
            auto r = world.receive(peer, cria::distributed::Tag::Stream, bytes);
            world.wait(r, "ping");
            auto s = world.send(peer, cria::distributed::Tag::Stream, bytes);
            world.wait(s, "pong");
        }
        const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        if (i >= 50) one_way_us.push_back(us / 2);
    }
    if (world.rank() == 0) {
        std::sort(one_way_us.begin(), one_way_us.end());
        double sum = 0;
        for (double v : one_way_us) sum += v;
        std::printf("hidden state of %ld token(s) x %ld floats (%.1f KiB): one way median %.1f us, mean %.1f us, p90 %.1f us (%d rounds)\n",
                    tokens, n_embd, static_cast<double>(bytes.size()) / 1024.0, one_way_us[one_way_us.size() / 2],
                    sum / static_cast<double>(one_way_us.size()), one_way_us[one_way_us.size() * 9 / 10], rounds);
    }
    return 0;
}
