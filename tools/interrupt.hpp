// interrupt.hpp: SIGINT / SIGTERM (and SIGHUP) end the tool with a message and exit code 128 + signal, after
// removing the temporary files of any output being written (gknn::remove_partial_outputs), so an interrupted
// search or gen never leaves a partial result: outputs appear under their names only once complete.
#pragma once

namespace gknn::cli {

void install_interrupt_handlers();

}  // namespace gknn::cli
