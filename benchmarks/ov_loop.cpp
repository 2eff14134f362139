// OpenVINO's throughput loop written by hand in C++, the reference the Python benchmark_app cannot be:
// N infer requests on a model compiled with N streams sharing N x T threads (benchmark_app's
// `-hint none -nstreams N -nthreads N*T -nireq N -infer_precision f32`), looped until the time is up;
// the requests in flight then finish and count. Prints inferences per second. Two loops:
//   sync:  N threads, each calling its own request's infer() back to back (dbench's own loop, in C++);
//   async: each request started again from its own completion callback (benchmark_app's design, as
//          OpenVINO's classification_sample_async restarts it).
//
// Built and run by benchmarks/throughput_vs_tools.py against the OpenVINO wheel's own headers and
// library: g++ -O2 -std=c++17 ov_loop.cpp -I<wheel>/include <wheel>/libs/libopenvino.so.* -Wl,-rpath,<wheel>/libs
//
//     ov_loop MODEL STREAMS THREADS SECONDS sync|async
//
// Its figures go, with throughput_vs_tools.py's, to a dated page under docs/measurements/ (the last:
// 2026-11-26-throughput-vs-tools.md); docs/benchmarks.md lists every benchmark.

#include <openvino/openvino.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;

// N threads, each looping its own request synchronously until `until`: inferences done.
long sync_loop(std::vector<ov::InferRequest>& requests, Clock::time_point until) {
    std::vector<long> counts(requests.size(), 0);
    std::vector<std::exception_ptr> failures(requests.size());
    std::vector<std::thread> threads;
    for (size_t k = 0; k < requests.size(); ++k) {
        threads.emplace_back([&, k] {
            try {
                do {
                    requests[k].infer();
                    ++counts[k];
                } while (Clock::now() < until);
            } catch (...) {
                failures[k] = std::current_exception();
            }
        });
    }
    long done = 0;
    for (size_t k = 0; k < threads.size(); ++k) {
        threads[k].join();
        done += counts[k];
    }
    for (auto& failure : failures)
        if (failure) std::rethrow_exception(failure);
    return done;
}

// Each request restarted from its completion callback until `until`: inferences done.
long async_loop(std::vector<ov::InferRequest>& requests, Clock::time_point until) {
    std::atomic<long> done{0};
    std::exception_ptr failure;
    std::mutex mutex;
    std::condition_variable finished;
    size_t active = requests.size();
    for (size_t k = 0; k < requests.size(); ++k) {
        requests[k].set_callback([&, k](std::exception_ptr error) {
            if (!error) ++done;
            if (!error && Clock::now() < until) {
                requests[k].start_async();
                return;
            }
            std::lock_guard<std::mutex> lock(mutex);
            if (error && !failure) failure = error;
            if (--active == 0) finished.notify_one();
        });
    }
    for (auto& request : requests) request.start_async();
    std::unique_lock<std::mutex> lock(mutex);
    finished.wait(lock, [&] { return active == 0; });
    if (failure) std::rethrow_exception(failure);
    return done.load();
}

int main(int argc, char** argv) {
    if (argc != 6 || (std::string(argv[5]) != "sync" && std::string(argv[5]) != "async")) {
        std::fprintf(stderr, "usage: ov_loop MODEL STREAMS THREADS SECONDS sync|async\n");
        return 2;
    }
    const bool sync = std::string(argv[5]) == "sync";
    const int streams = std::atoi(argv[2]);
    const int threads = std::atoi(argv[3]);
    const std::chrono::duration<double> budget(std::atof(argv[4]));
    try {
        ov::Core core;
        ov::CompiledModel compiled = core.compile_model(argv[1], "CPU", ov::num_streams(streams),
                                                        ov::inference_num_threads(streams * threads),
                                                        ov::hint::inference_precision(ov::element::f32));
        std::vector<ov::InferRequest> requests;
        std::mt19937 rng(0);
        std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
        for (int k = 0; k < streams; ++k) {
            ov::InferRequest request = compiled.create_infer_request();
            for (const auto& input : compiled.inputs()) {
                ov::Tensor tensor = request.get_tensor(input);
                if (tensor.get_element_type() != ov::element::f32) {
                    std::fprintf(stderr, "input %s is not f32: only fp32 graphs are looped here\n", input.get_any_name().c_str());
                    return 2;
                }
                float* data = tensor.data<float>();
                for (size_t i = 0; i < tensor.get_size(); ++i) data[i] = uniform(rng);
            }
            request.infer();  // the cold call, left out as benchmark_app's first inference is
            requests.push_back(request);
        }
        const auto start = Clock::now();
        const auto until = start + std::chrono::duration_cast<Clock::duration>(budget);
        const long done = sync ? sync_loop(requests, until) : async_loop(requests, until);
        const double took = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf("%.3f\n", static_cast<double>(done) / took);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "ov_loop: %s\n", error.what());
        return 1;
    }
    return 0;
}
