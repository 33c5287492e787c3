//! Row-by-row tests of Tables 1 and 2 (filled in by the test suite).
