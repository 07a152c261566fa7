// Placeholder until the CLI lands (harness/cli_*.cpp).
#include <cstdio>
int main() { std::puts("harness: CLI not built yet"); return 2; }
