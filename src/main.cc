// The weir executable: the engine's command line (src/cli) with the
// example jobs of examples/ (their commands, their jobs by name, the
// Nexmark generator as a SQL source).
#include "cli/command_line.h"
#include "examples/commands.h"

int main(int argc, char** argv) {
  weir::examples::register_examples();
  return weir::cli::run_command_line(argc, argv);
}
