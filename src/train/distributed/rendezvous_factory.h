// The two ways to meet, made by connect_rendezvous (rendezvous.cpp) from its method string.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/train/rendezvous.h"

namespace conveyor::train::detail {

std::unique_ptr<Rendezvous> make_tcp_rendezvous(const Ranks& ranks, const std::string& host, int port,
                                                const RendezvousOptions& options);
std::unique_ptr<Rendezvous> make_file_rendezvous(const Ranks& ranks, const std::filesystem::path& folder,
                                                 const RendezvousOptions& options);

// "0, 2, 3": the ranks an error message names (those missing, those still waiting).
std::string rank_list(const std::vector<int>& ranks);

}  // namespace conveyor::train::detail
