#include "harness/cli.hpp"

int main(int argc, char** argv) { return harness::cli::main(argc, argv); }
