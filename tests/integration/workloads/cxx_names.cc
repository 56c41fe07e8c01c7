// C++ frames whose names only read well demangled: a namespace, a class template and
// parameter lists (nm shows _ZNK6shapes3BoxImE4spinEl). `nodeprof record` must print
// shapes::Box<unsigned long>::spin and shapes::churn, as perf does.
// Usage: cxx_names SECONDS.
#include <chrono>
#include <cstdlib>

namespace shapes {
volatile unsigned long sink;

template <typename T> struct Box {
	T seed;
	__attribute__((noipa)) T spin(long rounds) const
	{
		T x = seed;
		for (long i = 0; i < rounds; i++)
			x = x * 2862933555777941757UL + static_cast<T>(i);
		return x;
	}
};

__attribute__((noipa)) unsigned long churn(const Box<unsigned long> &b, int times)
{
	unsigned long acc = 0;
	for (int i = 0; i < times; i++)
		acc += b.spin(100000);
	return acc;
}
} // namespace shapes

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? std::atof(argv[1]) : 5;
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	shapes::Box<unsigned long> b{ 7 };
	while (std::chrono::steady_clock::now() < end)
		shapes::sink = shapes::churn(b, 10);
	return 0;
}
