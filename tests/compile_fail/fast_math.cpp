// expect: devtensor: -ffast-math (or --use_fast_math) breaks the determinism contract
// -ffast-math defines __FAST_MATH__; defined here by hand, since the harness passes no flags.
// The twin opts out with DEVTENSOR_ALLOW_FAST_MATH, which voids the contract (DESIGN §15).
// twin: alone (it defines a macro before its first include)
#define __FAST_MATH__ 1
#ifdef DEVTENSOR_TWIN
#  define DEVTENSOR_ALLOW_FAST_MATH
#endif
#include <devtensor/devtensor.hpp>
void f() { (void)devtensor::ones<float>({2}); }
