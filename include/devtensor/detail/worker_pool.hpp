// devtensor's own CPU threads, for programs built without OpenMP: workers
// started on first use and parked on a condition variable between parallel
// regions. A region started from inside a region, or while another thread's
// region runs, runs on its calling thread instead of waiting.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace devtensor::detail {

class worker_pool {
public:
    /// The process's pool; never destroyed, since parked workers may outlive static destructors.
    static worker_pool& instance() {
        static worker_pool& pool = *new worker_pool;
        return pool;
    }

    /// Calls task(i) for every i in [0, count), the calling thread included, and
    /// returns when all are done; the first exception a task throws is rethrown here.
    template <class Task>
    void run(int count, Task&& task) {
        std::unique_lock region(region_mutex_, std::try_to_lock);
        if (count <= 1 || inside_region() || !region.owns_lock()) {
            for (int i = 0; i < count; ++i) task(i);
            return;
        }
        start_workers(count - 1);
        using task_type = std::remove_reference_t<Task>;
        const job j{const_cast<void*>(static_cast<const void*>(&task)),
                    [](void* t, int i) { (*static_cast<task_type*>(t))(i); }, count};
        {
            std::unique_lock lock(mutex_);
            // A worker that woke late may still hold the last job: let it see that
            // job's tasks are all taken before the counter starts over.
            finished_.wait(lock, [&] { return active_ == 0; });
            job_ = j;
            next_.store(0);
            done_ = 0;
            error_ = nullptr;
            ++generation_;
        }
        wake_.notify_all();
        work(j);  // the caller takes tasks too
        // Done when every task ran and no worker still holds this job.
        std::unique_lock lock(mutex_);
        finished_.wait(lock, [&] { return done_ == count && active_ == 0; });
        if (error_) std::rethrow_exception(error_);
    }

    /// Whether the calling thread runs a task of a region (a region it starts runs on it alone).
    static bool inside() { return inside_region(); }

private:
    struct job {
        void* task = nullptr;
        void (*call)(void*, int) = nullptr;
        int count = 0;
    };

    worker_pool() = default;

    static bool& inside_region() {
        thread_local bool inside = false;
        return inside;
    }

    void start_workers(int wanted) {
        std::lock_guard starting(mutex_);
        while (static_cast<int>(workers_.size()) < wanted) {
            workers_.emplace_back([this, seen = generation_]() mutable {
                inside_region() = true;
                for (;;) {
                    job j;
                    {
                        std::unique_lock lock(mutex_);
                        wake_.wait(lock, [&] { return generation_ != seen; });
                        seen = generation_;
                        j = job_;
                        ++active_;
                    }
                    work(j);
                    {
                        std::lock_guard lock(mutex_);
                        --active_;
                    }
                    finished_.notify_all();
                }
            });
            workers_.back().detach();
        }
    }

    /// Takes tasks of job `j` until none is left.
    void work(const job& j) {
        const bool was_inside = std::exchange(inside_region(), true);
        for (int i; (i = next_.fetch_add(1)) < j.count;) {
            std::exception_ptr failure;
            try {
                j.call(j.task, i);
            } catch (...) {
                failure = std::current_exception();
            }
            std::lock_guard lock(mutex_);
            if (failure && !error_) error_ = failure;
            ++done_;
        }
        inside_region() = was_inside;
        finished_.notify_all();
    }

    std::mutex region_mutex_;  // one parallel region at a time
    std::mutex mutex_;         // guards everything below but next_
    std::condition_variable wake_, finished_;
    std::vector<std::thread> workers_;
    job job_;
    std::uint64_t generation_ = 0;
    std::atomic<int> next_{0};  // the next task of the current job to take
    int done_ = 0, active_ = 0;  // tasks finished; workers holding the job
    std::exception_ptr error_;
};

}  // namespace devtensor::detail
