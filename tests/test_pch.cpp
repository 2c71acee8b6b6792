// The translation unit that builds the test binaries' precompiled header (tests/CMakeLists.txt:
// test_pch); it has no code of its own.
