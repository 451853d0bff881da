// Rank 1 dies in the middle of the job (its process exits without MPI_Finalize)
// while the others wait in a collective: Open MPI must end the whole job and name
// the rank, long before the communicator's timeout (tests/CMakeLists.txt checks
// the message and the time).
#include <devtensor/dist/mpi.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    namespace dist = devtensor::dist;
    dist::init(argc, argv);
    const auto comm = dist::world({.timeout = std::chrono::minutes(5)});
    comm.barrier();
    if (comm.rank() == 1) {
        std::fprintf(stderr, "rank 1 exits on purpose\n");
        std::_Exit(3);
    }
    comm.barrier();  // never completes: rank 1 is gone
    return 0;
}
