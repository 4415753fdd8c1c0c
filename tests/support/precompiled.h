// What the test files include most, parsed once per build into a precompiled header (conveyor_test_pch in
// tests/CMakeLists.txt) instead of once per test file: GoogleTest and the standard library only, so that a
// change to conveyor's own headers does not rebuild it. Every test file still includes what it uses.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
