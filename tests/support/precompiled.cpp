// The one file of conveyor_test_pch, the target that builds tests/support/precompiled.h's precompiled
// header for every test program (they take it with REUSE_FROM). It has no code of its own.
